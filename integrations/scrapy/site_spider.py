"""A tiny Scrapy spider over the synthetic crawl site (test/helpers/site.ts): follows every link.

Run with Debian's Scrapy (python3-scrapy), from the repository root:

    /usr/bin/python3 integrations/scrapy/site_spider.py http://127.0.0.1:PORT [JOBDIR]

It uses Scrapy's default scheduler and in-memory dupefilter (RFPDupeFilter, request fingerprints
over w3lib's canonicalize_url), or, with JOBDIR, Scrapy's own persisted queue and seen-file. It
prints one JSON line: pages parsed, responses by status and the run time in seconds.
"""

import json
import sys
import time

import scrapy
from scrapy.crawler import CrawlerProcess


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, site_url, **kwargs):
        super().__init__(**kwargs)
        self.start_urls = [site_url + "/"]
        self.pages = 0

    def parse(self, response):
        if response.status == 200:
            self.pages += 1
        for href in response.css("a::attr(href)").getall():
            yield response.follow(href, callback=self.parse)


def main():
    if len(sys.argv) not in (2, 3):
        sys.stderr.write("usage: site_spider.py SITE_URL [JOBDIR]\n")
        sys.exit(2)
    settings = {
        "LOG_LEVEL": "WARNING",
        "ROBOTSTXT_OBEY": False,
        "TELNETCONSOLE_ENABLED": False,
        "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        # 404s are answers, not errors to retry; the site has a few on purpose.
        "HTTPERROR_ALLOW_ALL": True,
    }
    if len(sys.argv) == 3:
        settings["JOBDIR"] = sys.argv[2]
    process = CrawlerProcess(settings)
    crawler = process.create_crawler(SiteSpider)
    started = time.monotonic()
    process.crawl(crawler, site_url=sys.argv[1])
    process.start()
    stats = crawler.stats.get_stats()
    print(json.dumps({
        "pages": crawler.spider.pages,
        "responses200": stats.get("downloader/response_status_count/200", 0),
        "responses404": stats.get("downloader/response_status_count/404", 0),
        "filteredDuplicates": stats.get("dupefilter/filtered", 0),
        "seconds": round(time.monotonic() - started, 3),
        "finishReason": stats.get("finish_reason"),
    }))


if __name__ == "__main__":
    main()
