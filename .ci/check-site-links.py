#!/usr/bin/env python3
"""Fails when a page of the built documentation site links to a page or an anchor that does not exist.

MkDocs 1.4's strict mode catches links to missing pages but not to missing anchors (#section); this walks every
HTML page of the built site, collects the ids each page defines, and checks every relative link and fragment.
It also checks that every page of the guide (docs/**/*.md) can be reached from docs/index.md by following the
pages' own links, not only through the theme's navigation.
Usage: check-site-links.py <site directory> [<docs directory>]
"""
import re
import os
import sys
from html.parser import HTMLParser
from urllib.parse import urlparse, unquote


class Page(HTMLParser):
    def __init__(self):
        super().__init__()
        self.ids, self.links = set(), []

    def handle_starttag(self, tag, attrs):
        a = dict(attrs)
        if a.get('id'):
            self.ids.add(a['id'])
        if tag == 'a' and a.get('name'):
            self.ids.add(a['name'])
        if tag == 'a' and a.get('href'):
            self.links.append(a['href'])


def main(site):
    pages = {}
    for root, _, files in os.walk(site):
        for f in files:
            if f.endswith('.html'):
                path = os.path.join(root, f)
                p = Page()
                with open(path, encoding='utf-8') as h:
                    p.feed(h.read())
                pages[os.path.normpath(path)] = p
    broken = []
    for path, page in pages.items():
        if os.path.basename(path) in ('404.html',):
            continue
        for href in page.links:
            u = urlparse(href)
            if u.scheme or u.netloc or href.startswith('mailto:'):
                continue  # external: not checked here (no network in CI)
            target = path
            if u.path:
                target = os.path.normpath(os.path.join(os.path.dirname(path), unquote(u.path)))
                if os.path.isdir(target):
                    target = os.path.join(target, 'index.html')
                if not os.path.exists(target):
                    broken.append(f'{os.path.relpath(path, site)}: {href} (no such file)')
                    continue
            if u.fragment and target.endswith('.html'):
                ids = pages.get(os.path.normpath(target))
                if ids is None or unquote(u.fragment) not in ids.ids:
                    broken.append(f'{os.path.relpath(path, site)}: {href} (no such anchor)')
    for b in broken:
        print('broken link:', b)
    print(f'{len(pages)} pages checked, {len(broken)} broken link(s)')
    return 1 if broken else 0


def unreachable(docs):
    pages = set()
    for root, _, files in os.walk(docs):
        for f in files:
            if f.endswith('.md'):
                pages.add(os.path.normpath(os.path.join(root, f)))
    start = os.path.normpath(os.path.join(docs, 'index.md'))
    seen, todo = {start}, [start]
    link = re.compile(r'\]\(([^)#\s]+\.md)(?:#[^)]*)?\)')
    while todo:
        page = todo.pop()
        with open(page, encoding='utf-8') as h:
            text = h.read()
        for target in link.findall(text):
            t = os.path.normpath(os.path.join(os.path.dirname(page), target))
            if t in pages and t not in seen:
                seen.add(t)
                todo.append(t)
    missing = sorted(os.path.relpath(p, docs) for p in pages - seen)
    for m in missing:
        print('not reachable from index.md by the pages\' links:', m)
    return 1 if missing else 0


if __name__ == '__main__':
    status = main(sys.argv[1])
    if len(sys.argv) > 2:
        status |= unreachable(sys.argv[2])
    sys.exit(status)
