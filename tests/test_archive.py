"""Safe extraction: every malicious member is refused, naming it; limits hold; good archives unpack."""

from __future__ import annotations

import io
import stat
import tarfile
import zipfile
from pathlib import Path

import pytest
from test_sources_servers import make_tar, make_zip

from flatten.sources.archive import archive_format, extract_archive
from flatten.sources.env import ExtractLimits
from flatten.sources.package import FetchError

LIMITS = ExtractLimits()


def tar_with(*members: tuple[tarfile.TarInfo, bytes | None]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for info, data in members:
            if data is not None:
                info.size = len(data)
            tar.addfile(info, io.BytesIO(data) if data is not None else None)
    return buf.getvalue()


def info(name: str, kind: bytes = tarfile.REGTYPE, link: str = "") -> tarfile.TarInfo:
    i = tarfile.TarInfo(name)
    i.type = kind
    i.linkname = link
    return i


def extract(tmp_path: Path, data: bytes, fmt: str, limits: ExtractLimits = LIMITS) -> Path:
    tmp_path.mkdir(parents=True, exist_ok=True)
    archive = tmp_path / f"a.{fmt}"
    archive.write_bytes(data)
    dest = tmp_path / "box" / "dest"
    extract_archive(archive, fmt, dest, limits=limits)
    return dest


@pytest.mark.parametrize(
    ("name", "fmt"),
    [
        ("x.zip", "zip"),
        ("x.tar.gz", "tar.gz"),
        ("x.tgz", "tar.gz"),
        ("x.tar.bz2", "tar.bz2"),
        ("x.tbz2", "tar.bz2"),
        ("x.tar.xz", "tar.xz"),
        ("x.txz", "tar.xz"),
        ("x.tar", "tar"),
        ("zip", "zip"),
        ("x.tf", None),
        ("x.gz", None),
    ],
)
def test_archive_format(name: str, fmt: str | None) -> None:
    assert archive_format(name) == fmt


def test_good_tar_and_zip_unpack_with_modes(tmp_path: Path) -> None:
    files = {"main.tf": "x", "scripts/run.sh": "#!/bin/sh\n", "a/b/c.txt": "c"}
    dest = extract(tmp_path / "t", make_tar(files), "tar.gz")
    assert (dest / "a/b/c.txt").read_text() == "c"
    assert (dest / "scripts/run.sh").stat().st_mode & stat.S_IXUSR
    dest = extract(tmp_path / "z", make_zip(files), "zip")
    assert sorted(p.relative_to(dest).as_posix() for p in dest.rglob("*") if p.is_file()) == sorted(files)


def test_internal_links_are_kept(tmp_path: Path) -> None:
    data = tar_with(
        (info("real.txt"), b"hi"),
        (info("link.txt", tarfile.SYMTYPE, "real.txt"), None),
        (info("sub/hard.txt", tarfile.LNKTYPE, "real.txt"), None),
    )
    dest = extract(tmp_path, data, "tar.gz")
    assert (dest / "link.txt").is_symlink() and (dest / "link.txt").read_text() == "hi"
    assert (dest / "sub/hard.txt").read_text() == "hi"


MALICIOUS_TAR = {
    "dotdot": ((info("../evil.txt"), b"x"),),
    "dotdot-deep": ((info("a/../../evil.txt"), b"x"),),
    "absolute": ((info("/tmp/evil.txt"), b"x"),),
    "symlink-to-etc": ((info("etc", tarfile.SYMTYPE, "/etc"), None),),
    "symlink-up": ((info("up", tarfile.SYMTYPE, "../.."), None),),
    "symlink-then-write-through": (
        (info("dir", tarfile.SYMTYPE, "/tmp"), None),
        (info("dir/evil.txt"), b"x"),
    ),
    "symlink-chain-escape": (
        (info("d", tarfile.SYMTYPE, "."), None),
        (info("e", tarfile.SYMTYPE, "d/.."), None),
    ),
    "hardlink-absolute": ((info("h", tarfile.LNKTYPE, "/etc/passwd"), None),),
    "hardlink-out": ((info("h", tarfile.LNKTYPE, "../outside.txt"), None),),
    "hardlink-missing": ((info("h", tarfile.LNKTYPE, "nothing-here"), None),),
    "char-device": ((info("null", tarfile.CHRTYPE), None),),
    "block-device": ((info("sda", tarfile.BLKTYPE), None),),
    "fifo": ((info("pipe", tarfile.FIFOTYPE), None),),
}


@pytest.mark.parametrize("case", sorted(MALICIOUS_TAR), ids=sorted(MALICIOUS_TAR))
def test_malicious_tar_members_are_refused(tmp_path: Path, case: str) -> None:
    (tmp_path / "box").mkdir()
    (tmp_path / "outside.txt").write_text("secret")
    members = MALICIOUS_TAR[case]
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, tar_with(*members), "tar.gz")
    assert "refus" in str(exc.value) or "outside" in str(exc.value)
    assert any(repr(m[0].name) in str(exc.value) for m in members)
    assert not (tmp_path / "evil.txt").exists() and not Path("/tmp/evil.txt").exists()
    assert (tmp_path / "outside.txt").read_text() == "secret"


def zip_with(entries: list[tuple[str, bytes, int]]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w") as zf:
        for name, data, mode in entries:
            zi = zipfile.ZipInfo(name)
            zi.external_attr = mode << 16
            zf.writestr(zi, data)
    return buf.getvalue()


@pytest.mark.parametrize(
    "entries",
    [
        [("../evil.txt", b"x", 0o100644)],
        [("/abs.txt", b"x", 0o100644)],
        [("..\\evil.txt", b"x", 0o100644)],
        [("link", b"/etc", 0o120777)],
        [("link", b"../../x", 0o120777)],
        [("dev", b"", 0o020644)],
    ],
    ids=["dotdot", "absolute", "backslash-dotdot", "symlink-abs", "symlink-up", "device"],
)
def test_malicious_zip_members_are_refused(tmp_path: Path, entries: list[tuple[str, bytes, int]]) -> None:
    (tmp_path / "box").mkdir()
    with pytest.raises(FetchError) as exc:
        extract(tmp_path, zip_with(entries), "zip")
    assert repr(entries[0][0]) in str(exc.value)


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_too_many_files(tmp_path: Path, fmt: str) -> None:
    files = {f"f{i}.txt": "x" for i in range(11)}
    data = make_tar(files) if fmt != "zip" else make_zip(files)
    with pytest.raises(FetchError, match="more than 10 members"):
        extract(tmp_path, data, fmt, ExtractLimits(max_files=10))


@pytest.mark.parametrize("fmt", ["tar.gz", "zip"])
def test_too_large(tmp_path: Path, fmt: str) -> None:
    files = {"big.bin": b"\0" * 5000}
    data = make_tar(files) if fmt != "zip" else make_zip(files)
    with pytest.raises(FetchError, match="more than 4096 bytes"):
        extract(tmp_path, data, fmt, ExtractLimits(max_bytes=4096))


def test_corrupt_archive(tmp_path: Path) -> None:
    with pytest.raises(FetchError, match="error decompressing"):
        extract(tmp_path, b"not an archive", "tar.gz")


def test_refused_archive_through_the_fetcher_is_a_download_diagnostic(tmp_path: Path) -> None:
    from conftest import write_tree
    from test_sources_fetch import call, run, source_env
    from test_sources_servers import HTTPServer, Reply, serving

    with serving(HTTPServer()) as srv:
        srv.routes["/evil.tgz"] = Reply(200, tar_with((info("../../evil.tf"), b"x")))
        root = write_tree(tmp_path / "root", {"main.tf": call("m", f"{srv.url}/evil.tgz")})
        _, _, diags = run(root, source_env(tmp_path))
    assert [d.summary for d in diags] == ["Failed to download module"]
    assert "'../../evil.tf'" in diags[0].detail and "refusing" in diags[0].detail
    assert not list((tmp_path / "cache").glob("v1/packages/*"))
    assert not list((tmp_path / "cache").glob("v1/tmp/*"))
