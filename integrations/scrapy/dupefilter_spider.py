"""The site spider with Scrapy's own scheduler and seenstore's dupefilter, for the scope test.

    VENV/bin/python integrations/scrapy/dupefilter_spider.py SPIDER_NAME SITE_URL SEENSTORE_URL

with seenstore_scrapy installed in VENV (`pip install ./integrations/scrapy`, see the README).
SEENSTORE_SCOPE is not set: the dupefilter's scope is the spider's name, SPIDER_NAME.

Prints `fetched URL` for each page parsed, then `finished`.
"""

import sys

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, site_url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [site_url + "/"]

    def parse(self, response):
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)
        print("fetched " + response.url, flush=True)


def main():
    spider_name, site_url, seenstore_url = sys.argv[1], sys.argv[2], sys.argv[3]
    process = CrawlerProcess({
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "HTTPERROR_ALLOW_ALL": True,
        "DUPEFILTER_CLASS": "seenstore_scrapy.dupefilter.SeenstoreDupeFilter",
        "SEENSTORE_URL": seenstore_url,
    })
    # A spider class per name, as two spiders of one project are two classes.
    process.crawl(type(spider_name, (SiteSpider,), {"name": spider_name}), site_url=site_url)
    process.start()
    print("finished", flush=True)


if __name__ == "__main__":
    main()
