"""The C kernels' cache (fp8lab.codec.kcache): nothing another user planted is ever loaded, nothing broken is loaded.

The attacker is a second, unprivileged user (uid 65534, ``nobody``, through ``setpriv``); the victim is
this test's user (root in CI) running a fresh Python that asks for the kernels. A planted library
carries a constructor that writes a marker file the moment ``dlopen`` maps it, so "never loaded" is
observed directly, not inferred. Each scenario is one class of planting: a folder the attacker made
(world-writable HOME, a pre-created ``FP8LAB_CACHE_DIR``, a relative one inside an attacker-writable
folder), a folder of ours whose mode lets others write, a swap after we created ours, a link; then
what this user's own files can do wrong (truncated, foreign, wrong digest, stale), concurrency (one
gcc for many threads and processes) and the switch ``FP8LAB_NO_CKERNELS``.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import stat
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from fp8lab.codec import ckernels, kcache

ATTACKER = 65534
GCC = shutil.which("gcc")
SETPRIV = shutil.which("setpriv")
needs_gcc = pytest.mark.skipif(GCC is None, reason="no gcc: the kernels are never built here")
needs_two_users = pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None or GCC is None,
                                     reason="needs root, setpriv and gcc to act as a second, unprivileged user")

PROBE = textwrap.dedent("""
    import json, sys
    from fp8lab.codec import ckernels
    print(json.dumps({"available": ckernels.available(), "reason": ckernels.reason()}))
""")


def _expected_name() -> str:
    """The library name the victim will look for (the attacker can compute it too: the inputs are public)."""
    version = subprocess.run([GCC, "--version"], capture_output=True, text=True).stdout
    return kcache.library_name(kcache.build_key(ckernels._SOURCE.read_text(), GCC, version, ckernels._FLAGS))


def _evil_library(tmp: Path, marker: Path, *, with_symbols: bool = False) -> Path:
    """A shared object whose constructor writes ``marker`` when loaded (optionally exporting the kernels' names)."""
    src = tmp / "evil.c"
    syms = "".join(f"int {n}(void) {{ return 0; }}\n" for n in
                   ("fp8lab_scaled_encode", "fp8lab_block_amax", "fp8lab_table_decode", "fp8lab_flush_count",
                    "fp8lab_transpose_f32", "fp8lab_band_encode")) if with_symbols else ""
    src.write_text('#include <stdio.h>\n__attribute__((constructor)) static void pwn(void) {\n'
                   f'  FILE *f = fopen("{marker}", "w"); if (f) {{ fputs("pwned", f); fclose(f); }}\n}}\n' + syms)
    out = tmp / "evil.so"
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(out), str(src)], check=True)
    out.chmod(0o755)
    return out


def _digest_for(blob: bytes, name: str) -> bytes:
    """A digest record that matches ``blob`` exactly, as an attacker would forge it."""
    key = kcache.build_key(ckernels._SOURCE.read_text(), GCC,
                           subprocess.run([GCC, "--version"], capture_output=True, text=True).stdout, ckernels._FLAGS)
    return json.dumps({"key": key, "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}).encode()


def _as_attacker(script: str) -> None:
    """Run a shell script as the unprivileged attacker."""
    subprocess.run([SETPRIV, f"--reuid={ATTACKER}", f"--regid={ATTACKER}", "--clear-groups", "sh", "-ec", script],
                   check=True, env={"PATH": "/usr/bin:/bin"})


def _plant(folder: Path, evil: Path) -> None:
    """As the attacker: create ``folder`` (mode 0777) and put the evil library and a matching digest in it."""
    name = _expected_name()
    staged = evil.parent / "digest.json"
    staged.write_bytes(_digest_for(evil.read_bytes(), name))
    staged.chmod(0o644)
    _as_attacker(f"mkdir -p '{folder}' && chmod 777 '{folder}' && cp '{evil}' '{folder}/{name}' "
                 f"&& cp '{staged}' '{folder}/{name}.sha256'")


def _victim(env: dict, cwd: Path | None = None) -> dict:
    """A fresh Python of this user asking for the kernels; returns what it reported."""
    base = {k: v for k, v in os.environ.items() if k not in ("FP8LAB_CACHE_DIR", "XDG_CACHE_HOME",
                                                                "FP8LAB_NO_CKERNELS")}
    res = subprocess.run([sys.executable, "-c", PROBE], env={**base, **env}, cwd=cwd, capture_output=True, text=True,
                         timeout=300)
    assert res.returncode == 0, res.stderr
    assert "Traceback" not in res.stderr
    return json.loads(res.stdout.strip().splitlines()[-1])


@pytest.fixture
def world():
    """A folder both users can reach (pytest's own tmp_path lies under a 0700 folder the attacker cannot traverse)."""
    import tempfile

    d = Path(tempfile.mkdtemp(prefix="fp8lab-kcache-"))
    d.chmod(0o755)
    yield d
    shutil.rmtree(d, ignore_errors=True)


def _assert_contained(report: dict, marker: Path, *words: str) -> None:
    assert not marker.exists(), "the planted library was loaded"
    assert report["available"] is False and all(w in report["reason"] for w in words), report


@needs_two_users
def test_a_world_writable_home_cannot_plant_the_default_cache(world: Path) -> None:
    """HOME is 0777: the attacker makes ~/.cache/fp8lab/ckernels first and plants; the victim refuses it (owner)."""
    home = world / "home"
    home.mkdir(mode=0o777)
    home.chmod(0o777)
    marker = world / "marker"
    _plant(home / ".cache" / "fp8lab" / "ckernels", _evil_library(world, marker))
    _assert_contained(_victim({"HOME": str(home)}), marker, f"uid {ATTACKER}")


@needs_two_users
def test_an_attacker_s_xdg_cache_home_is_refused(world: Path) -> None:
    """XDG_CACHE_HOME naming a folder the attacker owns: the cache inside it is the attacker's, refused."""
    pub = world / "pub"
    pub.mkdir()
    pub.chmod(0o777)
    xdg = pub / "xdg"
    marker = world / "marker"
    _plant(xdg / "fp8lab" / "ckernels", _evil_library(world, marker))
    _assert_contained(_victim({"XDG_CACHE_HOME": str(xdg), "HOME": str(world)}), marker, f"uid {ATTACKER}")


@needs_two_users
def test_a_cache_dir_the_attacker_created_first_is_refused(world: Path) -> None:
    """FP8LAB_CACHE_DIR names a folder the attacker made before the victim ran (with a forged, matching digest)."""
    pub = world / "pub"  # like /tmp: anyone may create a folder here first
    pub.mkdir()
    pub.chmod(0o1777)
    shared = pub / "shared-cache"
    marker = world / "marker"
    _plant(shared, _evil_library(world, marker))
    _assert_contained(_victim({"FP8LAB_CACHE_DIR": str(shared)}), marker, f"uid {ATTACKER}")


@needs_two_users
def test_a_relative_cache_dir_inside_an_attacker_writable_folder_is_refused(world: Path) -> None:
    """A relative FP8LAB_CACHE_DIR resolved in a folder the attacker can write: planted first, refused."""
    pub = world / "pub"
    pub.mkdir()
    pub.chmod(0o777)
    marker = world / "marker"
    _plant(pub / "cache", _evil_library(world, marker))
    _assert_contained(_victim({"FP8LAB_CACHE_DIR": "cache"}, cwd=pub), marker, f"uid {ATTACKER}")


@needs_two_users
def test_swapping_our_cache_for_the_attacker_s_after_we_built_is_refused(world: Path) -> None:
    """Our 0700 cache sits in an attacker-writable folder: the attacker renames it away and plants its own."""
    pub = world / "pub"
    pub.mkdir()
    pub.chmod(0o777)
    cache = pub / "cache"
    assert _victim({"FP8LAB_CACHE_DIR": str(cache)})["available"] is True
    assert stat.S_IMODE(cache.stat().st_mode) == 0o700
    marker = world / "marker"
    evil = _evil_library(world, marker)
    _as_attacker(f"mv '{cache}' '{pub}/ours'")
    _plant(cache, evil)
    _assert_contained(_victim({"FP8LAB_CACHE_DIR": str(cache)}), marker, f"uid {ATTACKER}")


@needs_two_users
def test_our_own_folder_left_world_writable_is_refused(world: Path) -> None:
    """A folder of ours with mode 0777 (made under umask 000 by an older fp8lab): another user's library in it is never loaded."""
    loose = world / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    marker = world / "marker"
    evil = _evil_library(world, marker)
    name = _expected_name()
    (world / "digest.json").write_bytes(_digest_for(evil.read_bytes(), name))
    (world / "digest.json").chmod(0o644)
    _as_attacker(f"cp '{evil}' '{loose}/{name}' && cp '{world}/digest.json' '{loose}/{name}.sha256'")
    _assert_contained(_victim({"FP8LAB_CACHE_DIR": str(loose)}), marker, "writable by group or others")


@needs_two_users
def test_a_link_in_a_loose_folder_never_reaches_the_loader(world: Path) -> None:
    """The attacker links our library's name to its file: the loader never follows a link (the folder is refused too)."""
    loose = world / "loose"
    loose.mkdir()
    loose.chmod(0o777)
    marker = world / "marker"
    evil = _evil_library(world, marker)
    name = _expected_name()
    _as_attacker(f"ln -s '{evil}' '{loose}/{name}'")
    _assert_contained(_victim({"FP8LAB_CACHE_DIR": str(loose)}), marker)


@needs_gcc
def test_the_cache_is_private_whatever_the_umask(tmp_path: Path) -> None:
    """Under umask 000 the folder, its missing parents, the library and its digest are private (0700 / 0600)."""
    cache = tmp_path / "a" / "b"
    code = f"import os; os.umask(0); exec({PROBE!r})"
    env = {k: v for k, v in os.environ.items() if k != "FP8LAB_NO_CKERNELS"}
    subprocess.run([sys.executable, "-c", code], env={**env, "FP8LAB_CACHE_DIR": str(cache)}, check=True,
                   capture_output=True, timeout=300)
    for d in (tmp_path / "a", cache):
        assert stat.S_IMODE(d.stat().st_mode) == 0o700
    files = list(cache.iterdir())
    assert {f.suffix for f in files} == {".so", ".sha256", ".lock"}
    for f in files:
        assert f.stat().st_uid == os.geteuid() and not f.stat().st_mode & 0o077, f


@pytest.fixture(scope="module")
def golden(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One cache built by a victim process; each damage test starts from a copy of it (one gcc run, not ten)."""
    cache = tmp_path_factory.mktemp("golden") / "cache"
    assert _victim({"FP8LAB_CACHE_DIR": str(cache)})["available"] is True
    return cache


def _built(cache: Path, golden: Path) -> Path:
    shutil.copytree(golden, cache)  # copies modes: 0700 folder, private files
    (lib,) = cache.glob("fp8lab_kernels_*.so")
    return lib


@needs_gcc
@pytest.mark.parametrize("damage", ["truncate", "truncate-to-zero", "flip-a-byte", "foreign-bytes", "digest-garbage",
                                    "digest-missing", "digest-of-another-key", "loose-mode", "replaced-by-link",
                                    "replaced-by-folder"])
def test_a_damaged_library_of_ours_is_rebuilt_never_loaded(tmp_path: Path, damage: str, golden: Path) -> None:
    """Each way our own cached library can go bad is caught before dlopen and rebuilt: no SIGBUS, no traceback."""
    cache = tmp_path / "cache"
    lib = _built(cache, golden)
    good = lib.read_bytes()
    digest = lib.with_name(lib.name + ".sha256")
    marker = tmp_path / "marker"
    if damage == "truncate":
        lib.write_bytes(good[: len(good) // 3])
    elif damage == "truncate-to-zero":
        lib.write_bytes(b"")
    elif damage == "flip-a-byte":
        lib.write_bytes(good[:4000] + bytes([good[4000] ^ 0xFF]) + good[4001:])
    elif damage == "foreign-bytes":
        lib.write_bytes(_evil_library(tmp_path, marker).read_bytes())
    elif damage == "digest-garbage":
        digest.write_text("{not json")
    elif damage == "digest-missing":
        digest.unlink()
    elif damage == "digest-of-another-key":
        record = json.loads(digest.read_text())
        digest.write_text(json.dumps({**record, "key": "0" * 64}))
    elif damage == "loose-mode":
        lib.chmod(0o777)
    elif damage == "replaced-by-link":
        evil = _evil_library(tmp_path, marker)
        lib.unlink()
        lib.symlink_to(evil)
    elif damage == "replaced-by-folder":
        lib.unlink()
        lib.mkdir()
    if damage == "replaced-by-folder":  # a folder under the name cannot be renamed over: skipped, never loaded
        report = _victim({"FP8LAB_CACHE_DIR": str(cache)})
        assert report["available"] is False and "kernels are not loaded" in report["reason"]
        return
    damaged = lib.read_bytes() if lib.is_file() and not lib.is_symlink() else None
    assert _victim({"FP8LAB_CACHE_DIR": str(cache)})["available"] is True
    assert not marker.exists()
    rebuilt = lib.read_bytes()
    record = json.loads(digest.read_text())
    assert not lib.is_symlink() and not lib.stat().st_mode & 0o077 and rebuilt[:4] == good[:4] == b"\x7fELF"
    assert record["sha256"] == hashlib.sha256(rebuilt).hexdigest() and record["size"] == len(rebuilt)
    assert damage in ("loose-mode", "digest-garbage", "digest-missing", "digest-of-another-key") or rebuilt != damaged


@needs_gcc
def test_a_library_without_our_kernels_falls_back_to_torch(tmp_path: Path, golden: Path) -> None:
    """A well-formed, correctly digested library of ours that lacks a kernel symbol: a reason, no traceback, torch runs."""
    cache = tmp_path / "cache"
    lib = _built(cache, golden)
    src = tmp_path / "empty.c"
    src.write_text("int unrelated(void) { return 1; }\n")
    subprocess.run([GCC, "-shared", "-fPIC", "-o", str(lib), str(src)], check=True)
    lib.chmod(0o700)
    digest = lib.with_name(lib.name + ".sha256")
    blob = lib.read_bytes()
    record = json.loads(digest.read_text())
    digest.write_text(json.dumps({**record, "size": len(blob), "sha256": hashlib.sha256(blob).hexdigest()}))
    report = _victim({"FP8LAB_CACHE_DIR": str(cache)})
    assert report["available"] is False and "lacks a kernel" in report["reason"]


@needs_gcc
def test_a_changed_source_gets_a_new_name_and_the_stale_library_is_left_unused(tmp_path: Path) -> None:
    """The name hashes source, compiler, flags, CPU and Python ABI: a different input never reuses a library."""
    version = subprocess.run([GCC, "--version"], capture_output=True, text=True).stdout
    src = ckernels._SOURCE.read_text()
    base = kcache.build_key(src, GCC, version, ckernels._FLAGS)
    variants = [kcache.build_key(src + "\n", GCC, version, ckernels._FLAGS),
                kcache.build_key(src, GCC + "x", version, ckernels._FLAGS),
                kcache.build_key(src, GCC, version + "x", ckernels._FLAGS),
                kcache.build_key(src, GCC, version, ckernels._FLAGS + ["-g"])]
    assert len({kcache.library_name(k) for k in [base, *variants]}) == 5


COUNTING_CC = """#!/bin/sh
case " $* " in *" -o "*) echo built >> "{log}";; esac
exec {gcc} "$@"
"""


@needs_gcc
def test_gcc_runs_once_for_many_threads_and_processes(tmp_path: Path) -> None:
    """8 threads in each of 4 processes arriving at an empty cache at once: one compile in all."""
    log = tmp_path / "compiles.log"
    cc = tmp_path / "cc.sh"
    cc.write_text(COUNTING_CC.format(log=log, gcc=GCC))
    cc.chmod(0o755)
    code = textwrap.dedent("""
        import threading
        from fp8lab.codec import ckernels
        out = []
        ts = [threading.Thread(target=lambda: out.append(ckernels.available())) for _ in range(8)]
        [t.start() for t in ts]; [t.join() for t in ts]
        assert out == [True] * 8, (out, ckernels.reason())
    """)
    env = {**{k: v for k, v in os.environ.items() if k != "FP8LAB_NO_CKERNELS"},
           "FP8LAB_CACHE_DIR": str(tmp_path / "cache"), "CC": str(cc)}
    procs = [subprocess.Popen([sys.executable, "-c", code], env=env, stderr=subprocess.PIPE, text=True)
             for _ in range(4)]
    for p in procs:
        _, err = p.communicate(timeout=300)
        assert p.returncode == 0, err
    assert log.read_text().split() == ["built"]


@pytest.mark.parametrize("value,enabled", [("0", True), ("false", True), ("No", True), ("off", True), ("", True),
                                           (" 0 ", True), ("1", False), ("yes", False), ("true", False),
                                           ("banana", False)])
def test_fp8lab_no_ckernels_means_what_it_says(monkeypatch: pytest.MonkeyPatch, value: str, enabled: bool) -> None:
    """0, false, no, off and empty leave the kernels on; any other value switches them off and names itself."""
    monkeypatch.setenv("FP8LAB_NO_CKERNELS", value)
    why = ckernels._disabled_by_env()
    assert (why is None) == enabled
    if not enabled:
        assert repr(value) in why


@needs_two_users
def test_a_read_only_cache_of_another_user_is_used_only_when_valid(world: Path) -> None:
    """An unprivileged victim with a read-only private cache: a valid library loads; an empty one falls back, saying why."""
    cache = world / "ro"
    cache.mkdir()
    os.chown(cache, ATTACKER, ATTACKER)
    cache.chmod(0o700)
    probe = world / "probe.py"
    probe.write_text(PROBE)
    probe.chmod(0o644)

    def run() -> dict:
        env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "HOME": str(world), "FP8LAB_CACHE_DIR": str(cache)}
        res = subprocess.run([SETPRIV, f"--reuid={ATTACKER}", f"--regid={ATTACKER}", "--clear-groups",
                              sys.executable, str(probe)], env=env, capture_output=True, text=True, timeout=300)
        assert res.returncode == 0 and "Traceback" not in res.stderr, res.stderr
        return json.loads(res.stdout.strip().splitlines()[-1])

    _as_attacker(f"chmod 500 '{cache}'")
    empty = run()
    assert empty["available"] is False and "not writable" in empty["reason"]
    _as_attacker(f"chmod 700 '{cache}'")
    assert run()["available"] is True
    _as_attacker(f"chmod 500 '{cache}'")
    assert run()["available"] is True
