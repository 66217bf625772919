"""Opt-in paper downloads that a dataset cannot turn against you. No pytest import.

A dataset is untrusted input: its ``paper_s3_url`` may point at your machine or your
network (``http://127.0.0.1:8080/admin``, a cloud metadata address, a redirect to
either), may trickle its reply forever, or may be a gigabyte. So every hop is checked
(http or https only; the host must resolve to public addresses unless private ones are
allowed), redirects are followed by hand and re-checked, the whole download has one
wall-clock deadline and a size cap, and what arrives must be a PDF.
"""

from __future__ import annotations

import ipaddress
import socket
import time
import urllib.error
import urllib.parse
import urllib.request

MAX_BYTES = 100 * 1024 * 1024
DEADLINE_S = 120.0
MAX_REDIRECTS = 5
_CHUNK = 64 * 1024


class DownloadRefused(Exception):
    """The download was not made, or was given up: the message says why."""


def check_target(url: str, allow_private: bool) -> None:
    parts = urllib.parse.urlsplit(url)
    if parts.scheme.lower() not in ("http", "https"):
        raise DownloadRefused(f"only http and https are fetched, not {parts.scheme or 'a relative URL'!r}")
    host = parts.hostname
    if not host:
        raise DownloadRefused("the URL names no host")
    try:
        infos = socket.getaddrinfo(host, parts.port or (443 if parts.scheme == "https" else 80),
                                   proto=socket.IPPROTO_TCP)
    except (socket.gaierror, UnicodeError) as error:
        raise DownloadRefused(f"cannot resolve {host}: {error}") from None
    for info in infos:
        address = ipaddress.ip_address(info[4][0])
        if not allow_private and not address.is_global:
            raise DownloadRefused(
                f"{host} resolves to {address}, a loopback, private, link-local or reserved address "
                "(--researchqa-download-allow-private allows it)")


class _NoRedirects(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: object, **kwargs: object) -> None:
        return None  # followed by hand, so that every hop is checked


def fetch_pdf(url: str, *, allow_private: bool = False, max_bytes: int = MAX_BYTES,
              deadline_s: float = DEADLINE_S) -> bytes:
    """The PDF at ``url`` (after at most MAX_REDIRECTS checked redirects), or DownloadRefused."""
    deadline = time.monotonic() + deadline_s
    opener = urllib.request.build_opener(_NoRedirects)
    for _ in range(MAX_REDIRECTS + 1):
        check_target(url, allow_private)
        remaining = deadline - time.monotonic()
        if remaining <= 0:
            raise DownloadRefused(f"no reply within {deadline_s:.0f} s")
        try:
            response = opener.open(url, timeout=min(remaining, 30.0))
        except urllib.error.HTTPError as error:
            if error.code in (301, 302, 303, 307, 308) and error.headers.get("Location"):
                url = urllib.parse.urljoin(url, error.headers["Location"])
                continue
            raise DownloadRefused(f"HTTP {error.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as error:
            raise DownloadRefused(str(getattr(error, "reason", error))) from None
        with response:
            declared = response.headers.get("Content-Length")
            if declared and declared.isdigit() and int(declared) > max_bytes:
                raise DownloadRefused(f"{int(declared)} bytes declared, more than the {max_bytes}-byte cap")
            body = bytearray()
            while True:
                if time.monotonic() > deadline:
                    raise DownloadRefused(f"not finished within {deadline_s:.0f} s (a server trickling its reply?)")
                try:
                    chunk = response.read1(_CHUNK) if hasattr(response, "read1") else response.read(_CHUNK)
                except (OSError, ValueError) as error:
                    raise DownloadRefused(f"the transfer broke off: {error}") from None
                if not chunk:
                    break
                body += chunk
                if len(body) > max_bytes:
                    raise DownloadRefused(f"more than the {max_bytes}-byte cap")
        if not bytes(body[:1024]).lstrip().startswith(b"%PDF"):
            raise DownloadRefused("the reply is not a PDF (it does not start with %PDF)")
        return bytes(body)
    raise DownloadRefused(f"more than {MAX_REDIRECTS} redirects")
