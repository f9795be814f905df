"""Fetches every page of the site from the running server: each must answer 200 with an <h1>."""
import sys
import urllib.request

base = sys.argv[1]
pages = ["index.html", "about.html"]
for page in pages:
    with urllib.request.urlopen(base + page, timeout=10) as response:
        body = response.read().decode()
        if response.status != 200 or "<h1>" not in body:
            sys.exit(f"{page}: status {response.status}, no <h1>")
print(f"ok: {len(pages)} pages")
