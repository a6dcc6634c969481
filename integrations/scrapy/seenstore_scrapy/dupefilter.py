"""A Scrapy DUPEFILTER_CLASS over `seenstore serve` (BF.ADD through redis-py).

    DUPEFILTER_CLASS = "seenstore_scrapy.dupefilter.SeenstoreDupeFilter"
    SEENSTORE_URL = "redis://127.0.0.1:6380"
    SEENSTORE_SCOPE = None        # default: the spider's name

Keyed by the request fingerprint (Scrapy's own notion of "the same request"). Durable, and shared
by every spider process using the scope; each spider has its own seen-set unless SEENSTORE_SCOPE
names one (two spiders on one scope skip each other's pages). On its own it is not safe against kill -9: Scrapy marks a
request seen when it is scheduled, so requests found but not yet fetched by a killed spider are
seen forever and in no queue. Use it with FrontierScheduler (scheduler.py), which needs no
dupefilter, or for spiders whose queue survives crashes.
"""

import redis
from scrapy.dupefilters import BaseDupeFilter


class SeenstoreDupeFilter(BaseDupeFilter):
    def __init__(self, url, scope, fingerprinter, crawler=None):
        self.url = url
        self.scope = scope
        self.fingerprinter = fingerprinter
        self.crawler = crawler
        self.redis = None

    @classmethod
    def from_crawler(cls, crawler):
        settings = crawler.settings
        return cls(settings.get("SEENSTORE_URL", "redis://127.0.0.1:6380"), settings.get("SEENSTORE_SCOPE"), crawler.request_fingerprinter, crawler)

    def open(self):
        # Scrapy's scheduler calls open() without the spider, but the crawler has had it since it
        # built the engine (and the scheduler with this filter): a spider's own seen-set by default.
        spider = getattr(self.crawler, "spider", None)
        if not self.scope:
            if spider is None:
                raise ValueError("SeenstoreDupeFilter: set SEENSTORE_SCOPE (the crawler has no spider to name the scope after)")
            self.scope = spider.name
        self.redis = redis.Redis.from_url(self.url)

    def close(self, reason):
        self.redis.close()

    def request_seen(self, request):
        return self.redis.bf().add(self.scope, self.fingerprinter.fingerprint(request).hex()) == 0
