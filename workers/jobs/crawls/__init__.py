"""Crawls: a site's pages discovered from start URLs and sitemaps, each visited once. The URL rules
(``urls``: normalisation, scope), sitemap parsing (``sitemaps``), the crawl's model (``models``) and
its frontier in Redis, a growing batch (``store``)."""
