#!/usr/bin/env python3
"""Writes a static, Imgur-shaped tag for nginx to serve: API pages at their paths, every image's
full-size file and its `m` thumbnail, and URL lists for the other tools.

usage: make-tag-tree.py ROOT TAG IMAGES FULL_BYTES THUMB_BYTES [DUPLICATE_PERCENT [ID_LETTER]]

ID_LETTER (B by default) starts every image id, so that several tags in one ROOT share none.

With DUPLICATE_PERCENT, that share of the listing's entries are albums that embed images listed
before, so the same URLs are asked for again; the tools' URL lists repeat them likewise.
"""
import json
import os
import zlib
import sys

root, tag = sys.argv[1], sys.argv[2]
images, full_bytes, thumb_bytes = int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5])
duplicate_percent = int(sys.argv[6]) if len(sys.argv) > 6 else 0
letter = sys.argv[7] if len(sys.argv) > 7 else "B"
per_page = 60

ids = [f"{letter}{n:06d}" for n in range(images)]
pool = os.urandom(1 << 20)


def write_bytes(path, size):
    # Each file starts at its own place in the pool: no two files are the same bytes (a WARC
    # archive would store repeats as revisits, which real tags seldom have).
    with open(path, "wb") as out:
        left = size
        offset = zlib.crc32(path.encode())
        while left > 0:
            chunk = pool[offset % len(pool):][:left]
            out.write(chunk)
            left -= len(chunk)
            offset += 7919


for image in ids:
    write_bytes(os.path.join(root, f"{image}.jpg"), full_bytes)
    write_bytes(os.path.join(root, f"{image}m.jpg"), thumb_bytes)


def image_object(image):
    return {"id": image, "type": "image/jpeg", "animated": False, "size": full_bytes, "is_album": False}


entries = [image_object(image) for image in ids]
urls = [u for image in ids for u in (f"/{image}m.jpg", f"/{image}.jpg")]
duplicates = images * duplicate_percent // 100
for n in range(duplicates):
    repeated = ids[(n * 7) % images]
    entries.insert((n * 13) % len(entries), {
        "id": f"D{n:05d}", "is_album": True, "images_count": 1, "cover": repeated,
        "images": [image_object(repeated)]})
    urls += [f"/{repeated}m.jpg", f"/{repeated}.jpg"]

pages = os.path.join(root, "3", "gallery", "t", tag, "time", "all")
os.makedirs(pages, exist_ok=True)
for page in range((len(entries) + per_page - 1) // per_page + 1):
    items = entries[page * per_page:(page + 1) * per_page]
    body = {"data": {"name": tag, "total_items": len(entries), "items": items}, "success": True, "status": 200}
    with open(os.path.join(pages, str(page)), "w") as out:
        json.dump(body, out)

with open(os.path.join(root, "urls.txt"), "w") as out:
    out.write("\n".join(urls) + "\n")
print(len(urls), len(set(urls)))
