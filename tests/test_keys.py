"""Key naming (RESEARCH.md §2, §2.3): expected keys are written out by hand."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from reference_impl.keys import BULLMQ, ECHOMQ, PROFILES, QUEUE_SUFFIXES, custom_profile

# Queue names / prefixes without ':' (the only forbidden character, §2).
NO_COLON = st.text(
    alphabet=st.characters(blacklist_categories=("Cs",), blacklist_characters=":"),
    min_size=1,
    max_size=20,
)


class TestBullmqProfile:
    def test_prefix_is_bull(self) -> None:
        assert BULLMQ.prefix == "bull"
        assert PROFILES["bullmq"] is BULLMQ

    def test_wait_key(self) -> None:
        assert BULLMQ.key("q", "wait") == "bull:q:wait"

    @pytest.mark.parametrize(
        ("suffix", "expected"),
        [
            ("delayed", "bull:q:delayed"),
            ("prioritized", "bull:q:prioritized"),
            ("pc", "bull:q:pc"),
            ("marker", "bull:q:marker"),
            ("meta", "bull:q:meta"),
            ("id", "bull:q:id"),
            ("events", "bull:q:events"),
            ("active", "bull:q:active"),
            ("waiting-children", "bull:q:waiting-children"),
        ],
    )
    def test_queue_keys(self, suffix: str, expected: str) -> None:
        assert BULLMQ.key("q", suffix) == expected

    def test_job_key(self) -> None:
        assert BULLMQ.job_key("q", "42") == "bull:q:42"

    def test_base_has_trailing_colon(self) -> None:
        # BASE = K('') = "<prefix>:<queue>:"
        assert BULLMQ.base("q") == "bull:q:"
        assert BULLMQ.key("q", "") == "bull:q:"

    def test_lock_key_is_base_plus_id_plus_lock(self) -> None:
        # §2.2: BASE..id..':lock'
        assert BULLMQ.job_key("q", "1:lock") == "bull:q:1:lock"

    def test_no_braces_added(self) -> None:
        # §2.3: BullMQ adds no braces itself.
        assert BULLMQ.queue_part("q") == "q"
        assert "{" not in BULLMQ.key("orders", "wait")


class TestEchomqProfile:
    def test_profile_registered(self) -> None:
        assert PROFILES["echomq"] is ECHOMQ
        assert ECHOMQ.prefix == "emq"

    def test_delayed_key(self) -> None:
        assert ECHOMQ.key("q", "delayed") == "emq:{q}:delayed"

    def test_other_keys(self) -> None:
        assert ECHOMQ.key("q", "prioritized") == "emq:{q}:prioritized"
        assert ECHOMQ.key("q", "marker") == "emq:{q}:marker"

    def test_base(self) -> None:
        assert ECHOMQ.base("q") == "emq:{q}:"

    def test_job_key(self) -> None:
        assert ECHOMQ.job_key("q", "42") == "emq:{q}:42"

    def test_queue_part_wrapped(self) -> None:
        assert ECHOMQ.queue_part("orders") == "{orders}"


class TestCustomPrefix:
    def test_custom_prefix(self) -> None:
        profile = custom_profile("myapp")
        assert profile.prefix == "myapp"
        assert profile.key("q", "wait") == "myapp:q:wait"
        assert profile.job_key("q", "7") == "myapp:q:7"
        assert profile.base("q") == "myapp:q:"

    def test_hash_tag_in_prefix(self) -> None:
        # §2.3: users may put the hash tag in the prefix ({bull}).
        profile = custom_profile("{bull}")
        assert profile.key("q", "delayed") == "{bull}:q:delayed"

    def test_custom_prefix_with_hash_tag_on_queue(self) -> None:
        profile = custom_profile("app", hash_tag=True)
        assert profile.key("q", "wait") == "app:{q}:wait"

    def test_braces_in_queue_name_are_legal(self) -> None:
        # §2.3: only ':' is forbidden in a queue name, so "{q}" is fine with the plain profile.
        assert BULLMQ.key("{q}", "delayed") == "bull:{q}:delayed"


class TestColonRejected:
    @pytest.mark.parametrize("queue", ["a:b", ":", "q:", ":q"])
    def test_colon_in_queue_name_bullmq(self, queue: str) -> None:
        with pytest.raises(ValueError):
            BULLMQ.key(queue, "wait")
        with pytest.raises(ValueError):
            BULLMQ.base(queue)
        with pytest.raises(ValueError):
            BULLMQ.job_key(queue, "1")

    def test_colon_in_queue_name_echomq(self) -> None:
        with pytest.raises(ValueError):
            ECHOMQ.key("a:b", "delayed")

    @pytest.mark.parametrize("prefix", ["a:b", "bull:", ":"])
    def test_colon_in_prefix(self, prefix: str) -> None:
        with pytest.raises(ValueError):
            custom_profile(prefix)

    def test_empty_prefix(self) -> None:
        with pytest.raises(ValueError):
            custom_profile("")


def test_suffixes_cover_section_2_1_core_keys() -> None:
    # The keys this protocol subset writes (§2.1).
    for suffix in ("wait", "active", "prioritized", "pc", "delayed", "marker", "meta", "id",
                   "events", "paused", "stalled"):
        assert suffix in QUEUE_SUFFIXES


@given(prefix=NO_COLON, queue=NO_COLON, suffix=st.sampled_from(QUEUE_SUFFIXES))
def test_key_shape_property(prefix: str, queue: str, suffix: str) -> None:
    # §2: a key is `<prefix>:<queue>:<suffix>` with single ':' separators.
    profile = custom_profile(prefix)
    key = profile.key(queue, suffix)
    assert key == prefix + ":" + queue + ":" + suffix
    assert key.split(":") == [prefix, queue, suffix]


@given(queue=NO_COLON)
def test_echomq_key_shape_property(queue: str) -> None:
    # §2.3: EchoMQ wraps the queue name in braces under prefix `emq`.
    assert ECHOMQ.base(queue) == "emq:{" + queue + "}:"


@given(queue=NO_COLON, left=NO_COLON)
def test_any_colon_in_queue_rejected_property(queue: str, left: str) -> None:
    with pytest.raises(ValueError):
        BULLMQ.key(left + ":" + queue, "wait")
