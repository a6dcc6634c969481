"""A Scrapy scheduler on seenstore's durable frontier, through `seenstore serve` and redis-py.

Discovery is exactly once and durable: `enqueue_request` is one SEEN.ENQUEUEFOR, which records the
request's fingerprint as seen and queues the request, in the queue of its URL's host, in the same
atomic step, so a spider killed
with kill -9 resumes with every request it had found. Requests are handed out under leases
(SEEN.TAKE) and finished by FrontierDoneMiddleware once the callback's output has been scheduled,
so a page's links are durable before the page is done. A restarted spider with the same
SEENSTORE_OWNER takes its dead predecessor's leases back at once (SEEN.RECLAIM).

Settings:
    SCHEDULER = "seenstore_scrapy.scheduler.FrontierScheduler"
    SPIDER_MIDDLEWARES = {"seenstore_scrapy.scheduler.FrontierDoneMiddleware": 0}
    SEENSTORE_URL = "redis://127.0.0.1:6380"      # where `seenstore serve` listens
    SEENSTORE_SCOPE = None                         # default: the spider's name
    SEENSTORE_OWNER = None                         # default: "scrapy-" + the spider's name
    SEENSTORE_LEASE_MS = 120000
    SEENSTORE_PREFETCH = 8
    DOWNLOAD_DELAY, CONCURRENT_REQUESTS_PER_DOMAIN   # become the scope's delay and in-flight limit per host
"""

import base64
import json
import pickle
import time
import uuid

import redis
from scrapy.core.scheduler import BaseScheduler
from scrapy.utils.request import request_from_dict

ID_META = "seenstore_id"


class FrontierScheduler(BaseScheduler):
    def __init__(self, crawler):
        settings = crawler.settings
        self.crawler = crawler
        self.url = settings.get("SEENSTORE_URL", "redis://127.0.0.1:6380")
        self.scope = settings.get("SEENSTORE_SCOPE")
        self.owner = settings.get("SEENSTORE_OWNER")
        self.lease_ms = settings.getint("SEENSTORE_LEASE_MS", 120000)
        self.prefetch = settings.getint("SEENSTORE_PREFETCH", 8)
        # Scrapy's politeness, kept by the frontier for every process sharing the scope: a host is
        # handed out at most once per DOWNLOAD_DELAY, at most CONCURRENT_REQUESTS_PER_DOMAIN at a time.
        self.delay_ms = int(round(settings.getfloat("DOWNLOAD_DELAY", 0) * 1000))
        self.per_queue = max(1, settings.getint("CONCURRENT_REQUESTS_PER_DOMAIN", 8))
        self.fingerprinter = crawler.request_fingerprinter
        self.buffer = []
        self.spider = None
        self.redis = None
        self._outstanding = 1
        self._outstanding_at = 0.0

    @classmethod
    def from_crawler(cls, crawler):
        return cls(crawler)

    def open(self, spider):
        self.spider = spider
        self.scope = self.scope or spider.name
        self.owner = self.owner or "scrapy-" + spider.name
        self.redis = redis.Redis.from_url(self.url)
        self.redis.execute_command("SEEN.QCONFIG", self.scope, "DELAY", self.delay_ms, "MAXINFLIGHT", self.per_queue)
        self.redis.execute_command("SEEN.RECLAIM", self.scope, self.owner)
        spider.seenstore = self

    def close(self, reason):
        if self.buffer:
            self.redis.execute_command("SEEN.RELEASE", self.scope, *[r.meta[ID_META] for r in self.buffer])
            self.buffer = []
        self.redis.close()

    def enqueue_request(self, request):
        key = self.fingerprinter.fingerprint(request).hex()
        if request.dont_filter:
            # Scrapy's "fetch even if seen" (start URLs): its fingerprint is recorded as seen (links
            # back to it are duplicates), and it is queued under a key of its own, so always.
            self.redis.execute_command("BF.ADD", self.scope, key)
            key = key + ":" + uuid.uuid4().hex
        data = base64.b64encode(pickle.dumps(request.to_dict(spider=self.spider), protocol=4)).decode("ascii")
        # Keyed by fingerprint, queued by the host of the request's URL.
        queued = self.redis.execute_command("SEEN.ENQUEUEFOR", self.scope, key, request.url, json.dumps(data))
        if queued and queued[0] == 1:
            self._outstanding = max(self._outstanding, 1)
            return True
        return False

    def next_request(self):
        if not self.buffer:
            rows = self.redis.execute_command(
                "SEEN.TAKE", self.scope, self.prefetch, "LEASE", self.lease_ms, "OWNER", self.owner, "PERQUEUE", self.per_queue
            )
            for entry_id, _key, _attempts, data in rows:
                request = request_from_dict(pickle.loads(base64.b64decode(json.loads(data))), spider=self.spider)
                request.meta[ID_META] = entry_id.decode("ascii")
                self.buffer.append(request)
        return self.buffer.pop(0) if self.buffer else None

    def has_pending_requests(self):
        if self.buffer:
            return True
        # Asked on every engine loop: the frontier's counts at most every 200 ms.
        now = time.monotonic()
        if now - self._outstanding_at > 0.2:
            stats = self.redis.execute_command("SEEN.FRONTIER", self.scope)
            counts = dict(zip(stats[0::2], stats[1::2]))
            self._outstanding = int(counts[b"pending"]) + int(counts[b"leased"])
            self._outstanding_at = now
        return self._outstanding > 0

    def done(self, request):
        entry_id = request.meta.get(ID_META)
        if entry_id is not None:
            self.redis.execute_command("SEEN.DONE", self.scope, entry_id)
            self._outstanding_at = 0.0


class FrontierDoneMiddleware:
    """Finishes a page's frontier entry once everything its callback yielded was scheduled."""

    def process_spider_output(self, response, result, spider):
        for item in result:
            yield item
        spider.seenstore.done(response.request)

    def process_spider_exception(self, response, exception, spider):
        spider.seenstore.done(response.request)
        return None
