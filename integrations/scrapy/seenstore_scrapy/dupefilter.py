"""A Scrapy DUPEFILTER_CLASS over `seenstore serve` (BF.ADD through redis-py).

    DUPEFILTER_CLASS = "seenstore_scrapy.dupefilter.SeenstoreDupeFilter"
    SEENSTORE_URL = "redis://127.0.0.1:6380"
    SEENSTORE_SCOPE = None        # default: the spider's name

Keyed by the request fingerprint (Scrapy's own notion of "the same request"). Durable, and shared
by every spider process using the scope. On its own it is not safe against kill -9: Scrapy marks a
request seen when it is scheduled, so requests found but not yet fetched by a killed spider are
seen forever and in no queue. Use it with FrontierScheduler (scheduler.py), which needs no
dupefilter, or for spiders whose queue survives crashes.
"""

import redis
from scrapy.dupefilters import BaseDupeFilter


class SeenstoreDupeFilter(BaseDupeFilter):
    def __init__(self, url, scope, fingerprinter):
        self.url = url
        self.scope = scope
        self.fingerprinter = fingerprinter
        self.redis = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        return cls(settings.get("SEENSTORE_URL", "redis://127.0.0.1:6380"), settings.get("SEENSTORE_SCOPE"), crawler.request_fingerprinter)

    def open(self):
        self.redis = redis.Redis.from_url(self.url)

    def close(self, reason):
        self.redis.close()

    def request_seen(self, request):
        scope = self.scope or "scrapy"
        return self.redis.bf().add(scope, self.fingerprinter.fingerprint(request).hex()) == 0
