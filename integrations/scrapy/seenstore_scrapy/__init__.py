"""seenstore for Scrapy: a frontier scheduler and a dupefilter over `seenstore serve` (redis-py)."""
