"""What a run was asked: the candidate, key profile, Redis and protocol (`RunOptions`, read
from the command line or the pytest plugin through the one option table), and the key profile
and protocol version those options name."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from conformance.core import options
from conformance.core.errors import UsageError
from conformance.core.options import EVERY_PROTOCOL, Option
from reference_impl import versions
from reference_impl.keys import PROFILES, KeyProfile, custom_profile
from reference_impl.versions import Version


@dataclass(frozen=True)
class RunOptions:
    """What to run against what; each field defaults to its option's default."""

    candidate: str = options.CANDIDATE.default
    profile: str = options.PROFILE.default
    redis: str = options.REDIS.default
    adapter_timeout: float = options.ADAPTER_TIMEOUT.default
    prefix: str | None = options.PREFIX.default
    #: The version judged against (`--protocol`), or "every" for `identify`.
    protocol: str = options.PROTOCOL.default

    @classmethod
    def of(cls, value: Callable[[Option], Any]) -> RunOptions:
        """The options given to a run, `value` reading each from where they were parsed: the
        command line's arguments, or the pytest plugin's `--bmq-` options (the same table)."""
        return cls(candidate=value(options.CANDIDATE), profile=value(options.PROFILE),
                   redis=value(options.REDIS), adapter_timeout=value(options.ADAPTER_TIMEOUT),
                   prefix=value(options.PREFIX), protocol=value(options.PROTOCOL))

    @property
    def judged(self) -> Version | None:
        """The protocol version, or None when every vector is judged at its own range."""
        return protocol_version(self.protocol)


def protocol_version(raw: str) -> Version | None:
    """`--protocol`'s value as a version (None for "every"); UsageError listing the ranges."""
    if raw == EVERY_PROTOCOL:
        return None
    try:
        return versions.check_supported(raw)
    except ValueError as exc:
        spans = ", ".join(str(span) for span in versions.supported_ranges())
        raise UsageError(f"--protocol: {exc}; the supported ranges are {spans}") from None


def profile_for(name: str, prefix: str | None = None) -> KeyProfile:
    """The key profile named on the command line, with BullMQ's `prefix` option if given."""
    try:
        profile = PROFILES[name]
    except KeyError:
        raise UsageError(f"unknown profile {name!r}; expected one of: "
                         f"{', '.join(PROFILES)}") from None
    if prefix is None:
        return profile
    try:
        return custom_profile(prefix, profile.hash_tag)
    except ValueError as exc:
        raise UsageError(f"--prefix: {exc}") from None
