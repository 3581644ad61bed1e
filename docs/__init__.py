"""The docs site's sources (``mkdocs.yml`` at the top): Markdown pages, and ``docs.gen``, which
writes the reference pages from the code. A package so that ``python -m docs.gen`` finds this one."""
