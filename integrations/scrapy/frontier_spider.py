"""The site spider on seenstore's frontier scheduler (seenstore_scrapy), for the resume test.

    VENV/bin/python integrations/scrapy/frontier_spider.py SITE_URL SEENSTORE_URL

with seenstore_scrapy installed in VENV (`pip install ./integrations/scrapy`, see the README).

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
    site_url, seenstore_url = sys.argv[1], sys.argv[2]
    process = CrawlerProcess({
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        "HTTPERROR_ALLOW_ALL": True,
        "CONCURRENT_REQUESTS": 8,
        "SCHEDULER": "seenstore_scrapy.scheduler.FrontierScheduler",
        "SPIDER_MIDDLEWARES": {"seenstore_scrapy.scheduler.FrontierDoneMiddleware": 0},
        "SEENSTORE_URL": seenstore_url,
        "SEENSTORE_LEASE_MS": 60000,
    })
    process.crawl(SiteSpider, site_url=site_url)
    process.start()
    print("finished", flush=True)


if __name__ == "__main__":
    main()
