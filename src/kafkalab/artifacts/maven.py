"""Maven repository access: which repository, the TLS trust store, downloads with retries, and checksums.

Jars are verified against the sha512 a lock pins (ensure_jar, fetch_all); lock writers check fresh downloads
against the checksums the repository publishes (verify_published).
"""

from __future__ import annotations

import concurrent.futures
import hashlib
import os
import ssl
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import BinaryIO

from kafkalab.artifacts.checksums import sha512_file
from kafkalab.artifacts.errors import ArtifactError, ChecksumMismatchError
from kafkalab.artifacts.lock import Artifact, JarLock, Lock

DEFAULT_REPOSITORY = "https://repo1.maven.org/maven2"
REPOSITORY_ENV = "KAFKALAB_MAVEN_REPO"
CA_BUNDLE_FALLBACK = Path("/etc/ssl/certs/ca-certificates.crt")
USER_AGENT = "kafkalab-artifacts/1"
HTTP_TIMEOUT_S = 60
DOWNLOAD_ATTEMPTS = 3
DOWNLOAD_JOBS = 6


def normalize_repository(value: str) -> str:
    """Accept http(s):// and file:// URLs, or a plain local directory; return a URL without trailing slash."""
    parsed = urllib.parse.urlparse(value)
    if parsed.scheme in ("http", "https", "file"):
        return value.rstrip("/")
    if parsed.scheme == "" and value:
        return Path(value).resolve().as_uri()
    raise ArtifactError(f"unsupported repository {value!r}: use an http(s):// or file:// URL, or a local directory")


def resolve_repository(cli_value: str | None, environ: Mapping[str, str]) -> str:
    return normalize_repository(cli_value or environ.get(REPOSITORY_ENV) or DEFAULT_REPOSITORY)


def ssl_context(environ: Mapping[str, str]) -> ssl.SSLContext:
    """SSL_CERT_FILE wins; else the default trust store, plus the system bundle when the default is empty."""
    cert_file = environ.get("SSL_CERT_FILE")
    if cert_file:
        if not Path(cert_file).is_file():
            raise ArtifactError(f"SSL_CERT_FILE={cert_file} does not exist")
        return ssl.create_default_context(cafile=cert_file)
    context = ssl.create_default_context()
    # A Python built against another OpenSSL may find no CAs at all; Debian's bundle is the fallback.
    if context.cert_store_stats().get("x509_ca", 0) == 0 and CA_BUNDLE_FALLBACK.is_file():
        context.load_verify_locations(cafile=str(CA_BUNDLE_FALLBACK))
    return context


def build_opener(context: ssl.SSLContext) -> urllib.request.OpenerDirector:
    return urllib.request.build_opener(urllib.request.HTTPSHandler(context=context))


def _open(opener: urllib.request.OpenerDirector, url: str) -> BinaryIO:
    request = urllib.request.Request(url, headers={"User-Agent": USER_AGENT})
    response: BinaryIO = opener.open(request, timeout=HTTP_TIMEOUT_S)
    return response


def _is_not_found(exc: Exception) -> bool:
    if isinstance(exc, urllib.error.HTTPError):
        return exc.code in (404, 410)
    return isinstance(exc, urllib.error.URLError) and isinstance(exc.reason, FileNotFoundError)


def download(opener: urllib.request.OpenerDirector, url: str, dest: Path) -> str:
    """Stream url into dest (via a temporary file), retrying transient errors; return the sha512."""
    dest.parent.mkdir(parents=True, exist_ok=True)
    last_error: Exception | None = None
    for attempt in range(1, DOWNLOAD_ATTEMPTS + 1):
        fd, tmp_name = tempfile.mkstemp(prefix=dest.name + ".", suffix=".part", dir=dest.parent)
        tmp = Path(tmp_name)
        try:
            digest = hashlib.sha512()
            with os.fdopen(fd, "wb") as out, _open(opener, url) as response:
                while chunk := response.read(1 << 20):
                    digest.update(chunk)
                    out.write(chunk)
            os.replace(tmp, dest)
            return digest.hexdigest()
        except (urllib.error.URLError, OSError, TimeoutError) as exc:
            tmp.unlink(missing_ok=True)
            if _is_not_found(exc):
                raise ArtifactError(f"not found in the repository: {url}") from None
            last_error = exc
            if attempt < DOWNLOAD_ATTEMPTS:
                time.sleep(2 * attempt)
        except BaseException:
            tmp.unlink(missing_ok=True)
            raise
    raise ArtifactError(f"download failed after {DOWNLOAD_ATTEMPTS} attempts: {url}: {last_error}")


def fetch_text(opener: urllib.request.OpenerDirector, url: str) -> str | None:
    """A small text resource (pom, checksum), or None when the repository does not have it."""
    try:
        with _open(opener, url) as response:
            return response.read().decode("utf-8")
    except (urllib.error.URLError, OSError) as exc:
        if _is_not_found(exc):
            return None
        raise ArtifactError(f"cannot read {url}: {exc}") from None


def mismatch_message(art: Artifact, url: str, actual: str) -> str:
    return (
        f"checksum mismatch for {art.file} ({art.coordinate})\n"
        f"  from:     {url}\n"
        f"  expected: sha512 {art.sha512}\n"
        f"  actual:   sha512 {actual}\n"
        "Refusing to assemble: the repository served different bytes than the committed lock pins.\n"
        "What to do: check that the repository is a faithful mirror of Maven Central (a corrupted or\n"
        "tampered proxy cache is the usual cause), fix or bypass it, and run assemble-kafka again. Do not\n"
        "edit the lock to match: if upstream really changed, a developer must review it and run relock."
    )


def ensure_jar(
    art: Artifact,
    repository: str,
    cache_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
) -> bool:
    """Make cache_dir hold a verified copy of art; return True when it had to be downloaded."""
    dest = cache_dir / art.repository_path
    if dest.is_file():
        if sha512_file(dest) == art.sha512:
            return False
        log(f"cached {art.file} does not match the lock; downloading it again")
        dest.unlink()
    url = f"{repository}/{art.repository_path}"
    actual = download(opener, url, dest)
    if actual != art.sha512:
        # Keep the refused bytes out of the cache, so nothing later mistakes them for verified.
        dest.unlink(missing_ok=True)
        raise ChecksumMismatchError(mismatch_message(art, url, actual))
    log(f"fetched {art.file} ({art.size / 1e6:.1f} MB)")
    return True


def fetch_all(
    lock: Lock | JarLock,
    repository: str,
    cache_dir: Path,
    opener: urllib.request.OpenerDirector,
    log: Callable[[str], None],
    jobs: int = DOWNLOAD_JOBS,
) -> tuple[int, int]:
    """Verify every jar of the lock into the cache; return (downloaded, cached). All errors are reported."""
    downloaded = cached = 0
    failures: list[ArtifactError] = []
    with concurrent.futures.ThreadPoolExecutor(max_workers=max(1, jobs)) as pool:
        futures = [pool.submit(ensure_jar, art, repository, cache_dir, opener, log) for art in lock.artifacts]
        for future in futures:
            try:
                if future.result():
                    downloaded += 1
                else:
                    cached += 1
            except ArtifactError as exc:
                failures.append(exc)
    if failures:
        mismatches = [f for f in failures if isinstance(f, ChecksumMismatchError)]
        first = mismatches[0] if mismatches else failures[0]
        more = f"\n({len(failures) - 1} more jar(s) failed too)" if len(failures) > 1 else ""
        raise type(first)(f"{first}{more}")
    return downloaded, cached


def published_checksum(opener: urllib.request.OpenerDirector, url: str) -> tuple[str, str]:
    """(algorithm, hex) from the repository's .sha512, else its .sha1 (older artifacts only have sha1)."""
    for algorithm in ("sha512", "sha1"):
        text = fetch_text(opener, f"{url}.{algorithm}")
        if text and text.split():
            return algorithm, text.split()[0].lower()
    raise ArtifactError(f"the repository publishes neither .sha512 nor .sha1 for {url}")


def verify_published(opener: urllib.request.OpenerDirector, repository: str, relative: str, path: Path) -> str:
    """Check a downloaded file against the repository's published checksum; return its sha512 for the lock."""
    sha512 = sha512_file(path)
    algorithm, expected = published_checksum(opener, f"{repository}/{relative}")
    actual = sha512 if algorithm == "sha512" else hashlib.new(algorithm, path.read_bytes()).hexdigest()
    if actual != expected:
        raise ChecksumMismatchError(
            f"{relative}: {algorithm} {actual} differs from the repository's published {expected}"
        )
    return sha512
