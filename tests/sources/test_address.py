"""Module source addresses (spec §5, §8.5): tables of valid and invalid strings, plus properties.

The tables restate OpenTofu's ``internal/addrs/module_source_test.go`` (``TestParseModuleSource``,
``TestParseModuleSourceRemote``, ``TestParseModuleSourceRegistry``,
``TestModuleSourceRemoteFromRegistry``) and the go-getter detector rules, for both dialects.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import flatten.sources
from flatten.sources import (
    DEFAULT_REGISTRY_HOSTS,
    InvalidSourceAddress,
    LocalSource,
    RegistrySource,
    RemoteSource,
    join_subdir,
    parse_module_source,
)

DIALECTS = ["terraform", "opentofu"]
NAME_RULE = (
    "must be between one and 64 characters, including ASCII letters, digits, dashes, and underscores, "
    "where dashes and underscores may not be the prefix or suffix"
)


def reg(ns: str, name: str, system: str, subdir: str = "", host: str = "") -> RegistrySource:
    return RegistrySource(host, ns, name, system, subdir)


def resolve_host(want: object, dialect: str) -> object:
    if isinstance(want, RegistrySource) and not want.host:
        return RegistrySource(
            DEFAULT_REGISTRY_HOSTS[dialect], want.namespace, want.name, want.system, want.subdir
        )
    return want


def test_exports() -> None:
    assert sorted(flatten.sources.__all__) == [
        "DEFAULT_REGISTRY_HOSTS",
        "InvalidSourceAddress",
        "LocalSource",
        "RegistrySource",
        "RemoteSource",
        "SourceAddress",
        "join_subdir",
        "parse_module_source",
    ]


VALID = [
    # Local paths (§5.2)
    pytest.param("./child", LocalSource("./child"), id="local-subdirectory"),
    pytest.param("./nope/../child", LocalSource("./child"), id="local-subdirectory-non-normalized"),
    pytest.param("../sibling", LocalSource("../sibling"), id="local-sibling"),
    pytest.param("./nope/../../sibling", LocalSource("../sibling"), id="local-sibling-non-normalized"),
    pytest.param(".\\child", LocalSource("./child"), id="windows-local-subdirectory"),
    pytest.param(".\\nope\\..\\child", LocalSource("./child"), id="windows-local-non-normalized"),
    pytest.param("..\\sibling", LocalSource("../sibling"), id="windows-local-sibling"),
    pytest.param(
        ".\\nope\\..\\..\\sibling", LocalSource("../sibling"), id="windows-local-sibling-non-normalized"
    ),
    pytest.param(
        "./nope\\nope/why\\./please\\don't", LocalSource("./nope/nope/why/please/don't"), id="mixed-slashes"
    ),
    pytest.param(".\\a\\b", LocalSource("./a/b"), id="windows-two-levels"),
    pytest.param("./a//b", LocalSource("./a/b"), id="local-double-slash"),
    pytest.param("./", LocalSource("./."), id="local-dot-slash"),
    pytest.param("./a/b/", LocalSource("./a/b"), id="local-trailing-slash"),
    pytest.param("../", LocalSource("./.."), id="local-dotdot-slash-go-clean-quirk"),
    pytest.param("../../a/../b", LocalSource("../../b"), id="local-two-up"),
    # Registry addresses (§5.3)
    pytest.param("hashicorp/subnets/cidr", reg("hashicorp", "subnets", "cidr"), id="registry-implied-host"),
    pytest.param(
        "hashicorp/subnets/cidr//examples/foo",
        reg("hashicorp", "subnets", "cidr", "examples/foo"),
        id="registry-implied-host-subdir",
    ),
    pytest.param(
        "hashicorp/subnets/cidr//examples/./foo/",
        reg("hashicorp", "subnets", "cidr", "examples/foo"),
        id="registry-subdir-cleaned",
    ),
    pytest.param(
        "example.com/awesomecorp/network/happycloud",
        reg("awesomecorp", "network", "happycloud", host="example.com"),
        id="registry-custom-host",
    ),
    pytest.param(
        "example.com/awesomecorp/network/happycloud//examples/foo",
        reg("awesomecorp", "network", "happycloud", "examples/foo", host="example.com"),
        id="registry-custom-host-subdir",
    ),
    pytest.param("example.com/a/b/c", reg("a", "b", "c", host="example.com"), id="registry-always-wins"),
    # Remote: GitHub shorthand
    pytest.param(
        "github.com/hashicorp/terraform-cidr-subnets",
        RemoteSource("git::https://github.com/hashicorp/terraform-cidr-subnets.git"),
        id="github-shorthand",
    ),
    pytest.param(
        "github.com/hashicorp/terraform-cidr-subnets//example/foo",
        RemoteSource("git::https://github.com/hashicorp/terraform-cidr-subnets.git", "example/foo"),
        id="github-shorthand-subdir",
    ),
    pytest.param(
        "github.com/hashicorp/terraform-cidr-subnets.git",
        RemoteSource("git::https://github.com/hashicorp/terraform-cidr-subnets.git"),
        id="github-shorthand-dot-git",
    ),
    pytest.param(
        "github.com/hashicorp/x//example/foo?",
        RemoteSource("git::https://github.com/hashicorp/x.git", "example/foo"),
        id="github-empty-query-dropped",
    ),
    pytest.param(
        "github.com/org/repo?ref=v1.2.0",
        RemoteSource("git::https://github.com/org/repo.git?ref=v1.2.0"),
        id="github-ref",
    ),
    pytest.param(
        "github.com/org/repo//modules/x?ref=v1.2.0",
        RemoteSource("git::https://github.com/org/repo.git?ref=v1.2.0", "modules/x"),
        id="github-subdir-ref",
    ),
    pytest.param(
        "github.com/org/repo/extra/path?ref=v1",
        RemoteSource("git::https://github.com/org/repo.git?ref=v1", "extra/path"),
        id="github-extra-segments-become-subdir",
    ),
    pytest.param(
        "github.com/org/repo/extra//given",
        RemoteSource("git::https://github.com/org/repo.git", "extra/given"),
        id="github-detected-subdir-joined",
    ),
    # Remote: git
    pytest.param(
        "git://example.com/code/baz.git", RemoteSource("git://example.com/code/baz.git"), id="git-protocol"
    ),
    pytest.param(
        "git://example.com/code/baz.git//bleep/bloop",
        RemoteSource("git://example.com/code/baz.git", "bleep/bloop"),
        id="git-protocol-subdir",
    ),
    pytest.param(
        "git::https://example.com/code/baz.git",
        RemoteSource("git::https://example.com/code/baz.git"),
        id="git-over-https",
    ),
    pytest.param(
        "git::https://example.com/code/baz.git//bleep/bloop",
        RemoteSource("git::https://example.com/code/baz.git", "bleep/bloop"),
        id="git-over-https-subdir",
    ),
    pytest.param(
        "git::https://example.com/code/baz.git//bleep/bloop?otherthing=blah",
        RemoteSource("git::https://example.com/code/baz.git?otherthing=blah", "bleep/bloop"),
        id="git-over-https-subdir-query",
    ),
    pytest.param(
        "git::https://example.com/vpc.git?ref=v1.2.0",
        RemoteSource("git::https://example.com/vpc.git?ref=v1.2.0"),
        id="git-ref-kept-with-package",
    ),
    pytest.param(
        "git::ssh://git@example.com/code/baz.git",
        RemoteSource("git::ssh://git@example.com/code/baz.git"),
        id="git-over-ssh-url",
    ),
    pytest.param(
        "git::ssh://git@example.com/code/baz.git//bleep/bloop",
        RemoteSource("git::ssh://git@example.com/code/baz.git", "bleep/bloop"),
        id="git-over-ssh-url-subdir",
    ),
    pytest.param(
        "git::git@example.com:code/baz.git",
        RemoteSource("git::ssh://git@example.com/code/baz.git"),
        id="git-over-ssh-scp",
    ),
    pytest.param(
        "git::git@example.com:code/baz.git//bleep/bloop",
        RemoteSource("git::ssh://git@example.com/code/baz.git", "bleep/bloop"),
        id="git-over-ssh-scp-subdir",
    ),
    pytest.param(
        "git@github.com:org/repo.git",
        RemoteSource("git::ssh://git@github.com/org/repo.git"),
        id="scp-like-without-forced-getter",
    ),
    pytest.param(
        "git@github.com:/org/repo.git",
        RemoteSource("git::ssh://git@github.com/org/repo.git"),
        id="scp-like-leading-slash",
    ),
    pytest.param(
        "git@github.com:org/repo.git?ref=v1&depth=1",
        RemoteSource("git::ssh://git@github.com/org/repo.git?depth=1&ref=v1"),
        id="scp-like-query-re-encoded-sorted",
    ),
    pytest.param(
        "git@github.com:org/repo.git//sub?ref=v1",
        RemoteSource("git::ssh://git@github.com/org/repo.git?ref=v1", "sub"),
        id="scp-like-subdir-query",
    ),
    # Remote: other getters and shorthands
    pytest.param("hg::http://example.com/repo", RemoteSource("hg::http://example.com/repo"), id="hg-forced"),
    pytest.param(
        "bitbucket.org/org/repo",
        RemoteSource("git::https://bitbucket.org/org/repo.git"),
        id="bitbucket-shorthand",
    ),
    pytest.param(
        "www.googleapis.com/storage/v1/BUCKET_NAME/PATH_TO_MODULE",
        RemoteSource("gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH_TO_MODULE"),
        id="gcs-implied-path-prefix",
    ),
    pytest.param(
        "gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH_TO_MODULE",
        RemoteSource("gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH_TO_MODULE"),
        id="gcs-forced-path-prefix",
    ),
    pytest.param(
        "www.googleapis.com/storage/v1/BUCKET_NAME/PATH/TO/module.zip",
        RemoteSource("gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH/TO/module.zip"),
        id="gcs-implied-archive",
    ),
    pytest.param(
        "gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH/TO/module.zip",
        RemoteSource("gcs::https://www.googleapis.com/storage/v1/BUCKET_NAME/PATH/TO/module.zip"),
        id="gcs-forced-archive",
    ),
    pytest.param(
        "s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip",
        RemoteSource("s3::https://s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip"),
        id="s3-implied-path-style",
    ),
    pytest.param(
        "s3::https://s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip",
        RemoteSource("s3::https://s3-eu-west-1.amazonaws.com/examplecorp-terraform-modules/vpc.zip"),
        id="s3-forced",
    ),
    pytest.param(
        "bucket.s3-eu-west-1.amazonaws.com/vpc.zip",
        RemoteSource("s3::https://s3-eu-west-1.amazonaws.com/bucket/vpc.zip"),
        id="s3-implied-vhost-style",
    ),
    pytest.param(
        "bucket.s3.eu-west-1.amazonaws.com/vpc.zip",
        RemoteSource("s3::https://s3.eu-west-1.amazonaws.com/bucket/vpc.zip"),
        id="s3-implied-new-vhost-style",
    ),
    pytest.param("http://example.com/module", RemoteSource("http://example.com/module"), id="http-url"),
    pytest.param("https://example.com/module", RemoteSource("https://example.com/module"), id="https-url"),
    pytest.param(
        "https://example.com/module.zip", RemoteSource("https://example.com/module.zip"), id="https-zip"
    ),
    pytest.param(
        "https://example.com/module?archive=tar",
        RemoteSource("https://example.com/module?archive=tar"),
        id="https-forced-archive",
    ),
    pytest.param(
        "https://example.com/module?archive=tar&checksum=blah",
        RemoteSource("https://example.com/module?archive=tar&checksum=blah"),
        id="https-archive-and-checksum",
    ),
    pytest.param(
        "https://example.com/pkg.tgz//mod/*?archive=tgz",
        RemoteSource("https://example.com/pkg.tgz?archive=tgz", "mod/*"),
        id="https-subdir-glob",
    ),
    pytest.param("/tmp/foo/example", RemoteSource("file:///tmp/foo/example"), id="absolute-path"),
    pytest.param("/tmp/foo//example", RemoteSource("file:///tmp/foo", "example"), id="absolute-path-subdir"),
    pytest.param(
        "dfgdfgsd:dgfhdfghdfghdfg/dfghdfghdfg",
        RemoteSource("dfgdfgsd:dgfhdfghdfghdfg/dfghdfghdfg"),
        id="go-getter-accepts-garbage-with-a-scheme",
    ),
    pytest.param(
        "oci://example.com/repo/module?tag=1",
        RemoteSource("oci://example.com/repo/module?tag=1"),
        id="oci-url-kept",
    ),
    pytest.param(
        "example.com:8080/a/b",
        RemoteSource("example.com:8080/a/b"),
        id="host-port-parses-as-scheme",
    ),
]


class TestParseModuleSource:
    @pytest.mark.parametrize("dialect", DIALECTS)
    @pytest.mark.parametrize(("raw", "want"), VALID)
    def test_valid(self, raw: str, want: object, dialect: str) -> None:
        assert parse_module_source(raw, has_version=False, dialect=dialect) == resolve_host(want, dialect)

    @pytest.mark.parametrize(
        ("raw", "reason"),
        [
            pytest.param(
                "hashicorp/subnets/cidr//../nope",
                'subdirectory path "../nope" leads outside of the module package',
                id="registry-escaping-subdir",
            ),
            pytest.param(
                "/tmp/foo//example/../../invalid",
                'subdirectory path "../invalid" leads outside of the module package',
                id="subdir-escaping-package",
            ),
            pytest.param(
                "git::https://example.com/x.git//../y",
                'subdirectory path "../y" leads outside of the module package',
                id="remote-escaping-subdir",
            ),
            pytest.param(
                "github.com/hashicorp",
                "GitHub URLs should be github.com/username/repo",
                id="github-too-short",
            ),
            pytest.param(
                "a.b.c.d.e.amazonaws.com/x", "URL is not a valid S3 URL", id="s3-unknown-host-shape"
            ),
            pytest.param(
                "storage.googleapis.com/a/b", "URL is not a valid GCS URL", id="gcs-too-few-segments"
            ),
            pytest.param(
                "git@github.com:org/repo.git?a=1;b=2",
                "error parsing Git SSH URL: invalid semicolon separator in query",
                id="scp-like-bad-query",
            ),
        ],
    )
    def test_invalid(self, raw: str, reason: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            parse_module_source(raw, has_version=False)
        assert info.value.summary == "Invalid module source address"
        assert info.value.reason == reason
        assert str(info.value) == f"Failed to parse module source address: {reason}."

    @pytest.mark.parametrize(
        ("dialect", "product"), [("terraform", "Terraform"), ("opentofu", "OpenTofu")], ids=DIALECTS
    )
    @pytest.mark.parametrize(
        "raw", ["boop/bloop", "module", ".", "..", "foo/bar/baz/qux/quux", "git::foo/bar"]
    )
    def test_relative_path_without_prefix(self, raw: str, dialect: str, product: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            parse_module_source(raw, has_version=False, dialect=dialect)
        addr = raw.removeprefix("git::")
        assert info.value.summary == "Invalid module source address"
        assert (
            info.value.reason == f"{product} cannot detect a supported external module source type for {addr}"
        )
        assert str(info.value) == (
            f"{product} failed to determine your intended installation method for remote module package "
            f'"{addr}".\n\nIf you intended this as a path relative to the current module, use '
            f'"./{addr}" instead. The "./" prefix indicates that the address is a relative filesystem path.'
        )

    @pytest.mark.parametrize(
        ("dialect", "reason"),
        [("terraform", "invalid source address: "), ("opentofu", "invalid source string: ")],
        ids=DIALECTS,
    )
    def test_empty(self, dialect: str, reason: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            parse_module_source("", has_version=False, dialect=dialect)
        assert info.value.reason == reason

    def test_github_query_with_two_question_marks(self) -> None:
        # go-getter (OpenTofu) refuses it; Terraform's own detector keeps everything after the first "?".
        with pytest.raises(InvalidSourceAddress, match=r"more than 1 '\?'"):
            parse_module_source("github.com/a/b?ref=x?y", has_version=False, dialect="opentofu")
        got = parse_module_source("github.com/a/b?ref=x?y", has_version=False, dialect="terraform")
        assert got == RemoteSource("git::https://github.com/a/b.git?ref=x?y")


class TestParseModuleSourceRemote:
    """``String()`` of a remote address puts ``//subdir`` before the query (TestParseModuleSourceRemote)."""

    @pytest.mark.parametrize(
        ("raw", "want"),
        [
            pytest.param(
                "git::https://example.com/code/baz.git?otherthing=blah",
                "git::https://example.com/code/baz.git?otherthing=blah",
                id="query",
            ),
            pytest.param(
                "git::https://example.com/code/baz.git//bleep/bloop?otherthing=blah",
                "git::https://example.com/code/baz.git//bleep/bloop?otherthing=blah",
                id="subdir-query",
            ),
            pytest.param(
                "github.com/org/repo/sub?ref=v1",
                "git::https://github.com/org/repo.git//sub?ref=v1",
                id="github",
            ),
        ],
    )
    def test_string(self, raw: str, want: str) -> None:
        assert str(parse_module_source(raw, has_version=False)) == want


class TestParseModuleSourceRegistry:
    """``version`` set: only a registry address will do (TestParseModuleSourceRegistry)."""

    @pytest.mark.parametrize(
        ("raw", "string", "display", "protocol"),
        [
            pytest.param(
                "hashicorp/consul/aws",
                "{default}/hashicorp/consul/aws",
                "hashicorp/consul/aws",
                "hashicorp/consul/aws",
                id="public-registry",
            ),
            pytest.param(
                "hashicorp/consul/aws//foo",
                "{default}/hashicorp/consul/aws//foo",
                "hashicorp/consul/aws//foo",
                "hashicorp/consul/aws",
                id="public-registry-subdir",
            ),
            pytest.param(
                "{default}/hashicorp/consul/aws",
                "{default}/hashicorp/consul/aws",
                "hashicorp/consul/aws",
                "hashicorp/consul/aws",
                id="explicit-default-host",
            ),
            pytest.param(
                "HashiCorp/Consul/aws",
                "{default}/HashiCorp/Consul/aws",
                "HashiCorp/Consul/aws",
                "HashiCorp/Consul/aws",
                id="mixed-case-names-kept",
            ),
            pytest.param(
                "Example.com:1234/HashiCorp/Consul/aws",
                "example.com:1234/HashiCorp/Consul/aws",
                "example.com:1234/HashiCorp/Consul/aws",
                "HashiCorp/Consul/aws",
                id="private-registry-port",
            ),
            pytest.param(
                "example.com:443/a/b/c",
                "example.com/a/b/c",
                "example.com/a/b/c",
                "a/b/c",
                id="port-443-dropped",
            ),
            pytest.param(
                "Испытание.com/HashiCorp/Consul/aws",
                "испытание.com/HashiCorp/Consul/aws",
                "испытание.com/HashiCorp/Consul/aws",
                "HashiCorp/Consul/aws",
                id="idn-hostname",
            ),
            pytest.param(
                "Испытание.com:1234/HashiCorp/Consul/aws//Foo",
                "испытание.com:1234/HashiCorp/Consul/aws//Foo",
                "испытание.com:1234/HashiCorp/Consul/aws//Foo",
                "HashiCorp/Consul/aws",
                id="idn-hostname-port-subdir",
            ),
            pytest.param(
                "a_b/c-d/e9",
                "{default}/a_b/c-d/e9",
                "a_b/c-d/e9",
                "a_b/c-d/e9",
                id="underscore-and-dash-inside",
            ),
        ],
    )
    @pytest.mark.parametrize("dialect", DIALECTS)
    def test_valid(self, raw: str, string: str, display: str, protocol: str, dialect: str) -> None:
        default = DEFAULT_REGISTRY_HOSTS[dialect]
        got = parse_module_source(raw.format(default=default), has_version=True, dialect=dialect)
        assert isinstance(got, RegistrySource)
        assert str(got) == string.format(default=default)
        assert got.for_display(dialect=dialect) == display
        assert got.protocol_path == protocol

    @pytest.mark.parametrize(
        ("raw", "reason"),
        [
            pytest.param(
                "---.com/HashiCorp/Consul/aws",
                'invalid module registry hostname "---.com"; internationalized domain names must be given as '
                "direct unicode characters, not in punycode",
                id="invalid-hostname",
            ),
            pytest.param(
                "xn--80akhbyknj4f.com/a/b/c",
                'invalid module registry hostname "xn--80akhbyknj4f.com"; internationalized domain names '
                "must be given as direct unicode characters, not in punycode",
                id="punycode-hostname",
            ),
            pytest.param(
                "ex_ample.com/a/b/c",
                'invalid module registry hostname "ex_ample.com"',
                id="hostname-underscore",
            ),
            pytest.param(
                "example.com:0/a/b/c",
                'invalid module registry hostname "example.com:0"',
                id="hostname-bad-port",
            ),
            pytest.param(
                "foo/var/baz/qux",
                "invalid module registry hostname: must contain at least one dot",
                id="hostname-one-label",
            ),
            pytest.param(
                "foo/var/no-no-no",
                'invalid target system "no-no-no": must be between one and 64 ASCII letters or digits',
                id="target-system-characters",
            ),
            pytest.param(
                "foo/var/AWS",
                'invalid target system "AWS": must be between one and 64 ASCII letters or digits',
                id="target-system-uppercase",
            ),
            pytest.param(
                "foo/var/" + "a" * 65,
                f'invalid target system "{"a" * 65}": must be between one and 64 ASCII letters or digits',
                id="target-system-length",
            ),
            pytest.param(
                "boop!/var/baz",
                'invalid namespace "boop!": ' + NAME_RULE,
                id="invalid-namespace",
            ),
            pytest.param(
                "-boop/var/baz",
                'invalid namespace "-boop": ' + NAME_RULE,
                id="namespace-leading-dash",
            ),
            pytest.param(
                "boop/var_/baz",
                'invalid module name "var_": ' + NAME_RULE,
                id="name-trailing-underscore",
            ),
            pytest.param(
                "boop/" + "n" * 65 + "/baz",
                f'invalid module name "{"n" * 65}": ' + NAME_RULE,
                id="name-too-long",
            ),
            pytest.param(
                "foo.com/var/baz",
                "source address must have three more components after the hostname: the namespace, the name, "
                "and the target system",
                id="missing-part-with-hostname",
            ),
            pytest.param(
                "foo/var/baz?otherthing",
                "module registry addresses may not include a query string portion",
                id="errant-query-string",
            ),
            pytest.param(
                "github.com/HashiCorp/Consul/aws",
                "can't use \"github.com\" as a module registry host, because it's reserved for installing "
                "directly from version control repositories",
                id="github-reserved",
            ),
            pytest.param(
                "bitbucket.org/HashiCorp/Consul/aws",
                "can't use \"bitbucket.org\" as a module registry host, because it's reserved for installing "
                "directly from version control repositories",
                id="bitbucket-reserved",
            ),
            pytest.param(
                "./boop",
                'can\'t use local directory "./boop" as a module registry address',
                id="local-current",
            ),
            pytest.param(
                "../boop",
                'can\'t use local directory "../boop" as a module registry address',
                id="local-parent",
            ),
            pytest.param(
                "boop/bloop",
                "a module registry source address must have either three or four slash-separated components",
                id="two-parts",
            ),
            pytest.param(
                "git::https://example.com/vpc.git?ref=v1.2.0",
                'invalid module registry hostname "git::https:"',
                id="git-url-with-version",
            ),
            pytest.param(
                "hashicorp/consul/aws//../x",
                'subdirectory path "../x" leads outside of the module package',
                id="escaping-subdir",
            ),
        ],
    )
    @pytest.mark.parametrize(
        ("dialect", "product"), [("terraform", "Terraform"), ("opentofu", "OpenTofu")], ids=DIALECTS
    )
    def test_invalid(self, raw: str, reason: str, dialect: str, product: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            parse_module_source(raw, has_version=True, dialect=dialect)
        assert info.value.summary == "Invalid registry module source address"
        assert info.value.reason == reason
        assert str(info.value) == (
            f"Failed to parse module registry address: {reason}.\n\n{product} assumed that you intended a "
            'module registry source address because you also set the argument "version", which applies only '
            "to registry modules."
        )

    @pytest.mark.parametrize(
        "raw", ["github.com/HashiCorp/Consul/aws", "foo/var/baz/qux", "foo/var/no-no-no", "boop!/var/baz"]
    )
    def test_invalid_registry_falls_through_to_remote(self, raw: str) -> None:
        """Without ``version`` a registry error is discarded and the string is tried as remote."""
        try:
            got = parse_module_source(raw, has_version=False)
        except InvalidSourceAddress as exc:
            assert exc.summary == "Invalid module source address"
        else:
            assert isinstance(got, RemoteSource)


class TestStrings:
    def test_registry_str_and_package(self) -> None:
        got = RegistrySource("registry.terraform.io", "ns", "n", "aws", "a/b")
        assert str(got) == "registry.terraform.io/ns/n/aws//a/b"
        assert got.package == "registry.terraform.io/ns/n/aws"
        assert got.for_display(dialect="terraform") == "ns/n/aws//a/b"
        assert got.for_display(dialect="opentofu") == "registry.terraform.io/ns/n/aws//a/b"

    @pytest.mark.parametrize(
        ("source", "want"),
        [
            pytest.param(RemoteSource("git::https://h/x.git"), "git::https://h/x.git", id="plain"),
            pytest.param(
                RemoteSource("git::https://h/x.git", "sub"), "git::https://h/x.git//sub", id="subdir"
            ),
            pytest.param(
                RemoteSource("git::https://h/x.git?ref=v1", "sub"),
                "git::https://h/x.git//sub?ref=v1",
                id="query",
            ),
        ],
    )
    def test_remote_str(self, source: RemoteSource, want: str) -> None:
        assert str(source) == want

    def test_local_str(self) -> None:
        assert str(LocalSource("../x")) == "../x"


class TestJoinSubdir:
    """Local sources inside a remote package (§5.7, ``ResolveRelativeModuleSource``)."""

    @pytest.mark.parametrize(
        ("subdir", "local", "want"),
        [
            pytest.param("", "./a", "a", id="root-child"),
            pytest.param("modules/a", "../b", "modules/b", id="sibling"),
            pytest.param("modules/a", "./c", "modules/a/c", id="child"),
            pytest.param("modules/a", "../..", "", id="back-to-package-root"),
            pytest.param("modules/a", "./.", "modules/a", id="self"),
            pytest.param("", "./.", "", id="root-self"),
            pytest.param("a/b/c", "../../x/./y", "a/x/y", id="cleaned"),
        ],
    )
    def test_join(self, subdir: str, local: str, want: str) -> None:
        assert join_subdir(subdir, local) == want

    @pytest.mark.parametrize(
        ("subdir", "local"),
        [
            pytest.param("", "../x", id="root-parent"),
            pytest.param("modules/a", "../../../x", id="too-many-dotdots"),
            pytest.param("a", "../..", id="above-root"),
        ],
    )
    def test_escape(self, subdir: str, local: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            join_subdir(subdir, local, package="git::https://h/x.git", module="module.a.module.b")
        assert info.value.summary == "Local module path escapes module package"
        assert str(info.value) == (
            "The given source directory for module.a.module.b would be outside of its containing package "
            '"git::https://h/x.git". Local source addresses starting with "../" must stay within the same '
            "package that the calling module belongs to."
        )
        assert info.value.reason == f'relative path {local} has too many "../" segments'

    @pytest.mark.parametrize(
        ("dialect", "product"), [("terraform", "Terraform"), ("opentofu", "OpenTofu")], ids=DIALECTS
    )
    def test_escape_absolute_package_hint(self, dialect: str, product: str) -> None:
        with pytest.raises(InvalidSourceAddress) as info:
            join_subdir("", "../x", package="/srv/modules", dialect=dialect)
        assert str(info.value).endswith(
            f"\n\n{product} treats absolute filesystem paths as external modules which establish a new "
            "module package. To treat this directory as part of the same package as its caller, use a local "
            'path starting with either "./" or "../".'
        )


# ---------------------------------------------------------------------------------------------
# Properties

_SEGMENT = st.text(alphabet="abc.-_/\\:?@+=&~*% ", min_size=0, max_size=12)


@settings(max_examples=400, deadline=None)
@given(
    raw=st.one_of(
        st.text(max_size=40),
        st.builds(
            lambda a, b, c: a + b + c,
            st.sampled_from(
                ["", "./", "../", "git::", "github.com/", "https://", "git@", "/", "a/b/", "x.com/"]
            ),
            _SEGMENT,
            _SEGMENT,
        ),
    ),
    has_version=st.booleans(),
    dialect=st.sampled_from(DIALECTS),
)
def test_only_invalid_source_address_escapes(raw: str, has_version: bool, dialect: str) -> None:
    """Whatever the input, the parser returns an address or raises its one narrow error."""
    try:
        got = parse_module_source(raw, has_version=has_version, dialect=dialect)
    except InvalidSourceAddress as exc:
        assert exc.summary in ("Invalid module source address", "Invalid registry module source address")
        return
    if has_version:
        assert isinstance(got, RegistrySource)


_NAME = st.from_regex(r"[0-9A-Za-z](?:[0-9A-Za-z_-]{0,10}[0-9A-Za-z])?", fullmatch=True)


@settings(max_examples=200, deadline=None)
@given(
    ns=_NAME,
    name=_NAME,
    system=st.from_regex(r"[0-9a-z]{1,8}", fullmatch=True),
    subdir=st.lists(st.from_regex(r"[a-z]{1,4}", fullmatch=True), max_size=3).map("/".join),
    dialect=st.sampled_from(DIALECTS),
)
def test_registry_round_trip(ns: str, name: str, system: str, subdir: str, dialect: str) -> None:
    """A registry address parses back to itself from both its string and its display form."""
    raw = f"{ns}/{name}/{system}" + (f"//{subdir}" if subdir else "")
    got = parse_module_source(raw, has_version=True, dialect=dialect)
    assert isinstance(got, RegistrySource)
    assert parse_module_source(str(got), has_version=True, dialect=dialect) == got
    assert got.for_display(dialect=dialect) == raw
    assert parse_module_source(raw, has_version=False, dialect=dialect) == got


@settings(max_examples=200, deadline=None)
@given(parts=st.lists(st.sampled_from(["a", "b", ".", "..", "", "c d"]), min_size=1, max_size=6))
def test_local_parse_is_idempotent(parts: list[str]) -> None:
    """A cleaned local path is a fixed point of the parser."""
    got = parse_module_source("./" + "/".join(parts), has_version=False)
    assert isinstance(got, LocalSource)
    assert got.path.startswith(("./", "../"))
    assert parse_module_source(got.path, has_version=False) == got
