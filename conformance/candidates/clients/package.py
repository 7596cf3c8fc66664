"""The installed `bullmq` package, as the `bullmq-py` candidate meets it.

Which distribution provides the import (the official release, a fork, an older release) and how
to name it; whether it is the pinned official release (`conformance.core.pins`); the
folder of scripts a package ships (`commands_folder`, `installed_scripts`); the frozen clock an
op runs on; checking a method's signature before a call; and turning the package's exceptions
back into the script codes behind them (`PackageError`, `code_or_raise`).
"""

from __future__ import annotations

import contextlib
import importlib
import importlib.metadata
import inspect
import math
import re
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any, cast
from unittest import mock

from conformance.core.errors import CandidateError
from conformance.core.pins import PINNED_VERSION
from reference_impl.ops import Result

#: The package modules whose `time.time()` an op can reach (Job.__init__, Job.moveToDelayed,
#: Scripts.moveToActive).
CLOCK_MODULES = ("bullmq.job", "bullmq.scripts")
#: Modules that read the clock too where a release has them: its job schedulers (a worker
#: picking up an iteration). A release without them has no such op to freeze.
OPTIONAL_CLOCK_MODULES = ("bullmq.job_scheduler",)
_UNKNOWN_CODE = re.compile(r"Unknown code (-?\d+) error for ")


def provider(module: ModuleType) -> tuple[str, str] | None:
    """The installed distribution (name, version) whose files hold the imported `bullmq`, or
    None when it came from elsewhere (a folder on the path, an editable checkout)."""
    init = getattr(module, "__file__", None)
    if init is None:
        return None
    target = Path(init).resolve()
    for name in importlib.metadata.packages_distributions().get("bullmq", []):
        try:
            dist = importlib.metadata.distribution(name)
        except importlib.metadata.PackageNotFoundError:
            continue
        for file in dist.files or ():
            if file.parts[-2:] == ("bullmq", "__init__.py") and \
                    Path(str(dist.locate_file(file))).resolve() == target:
                return dist.metadata["Name"] or name, dist.version
    return None


def _canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def describe(module: ModuleType) -> tuple[str, str]:
    """(the package, as `<distribution> <version>`; that, with a warning unless it is the
    pinned official release) for skip messages and the run header."""
    found = provider(module)
    if found is None:
        version = getattr(module, "__version__", "(no __version__)")
        where = Path(getattr(module, "__file__", None) or ".").parent
        package = f"bullmq {version}"
        return package, (f"{package} imported from {where}, not from an installed "
                         f"distribution; not the pinned official bullmq {PINNED_VERSION}")
    name, version = found
    package = f"{name} {version}"
    if _canonical(name) != "bullmq":
        return package, (f"{package} (provides the bullmq import; not the pinned official "
                         f"bullmq {PINNED_VERSION})")
    if version != PINNED_VERSION:
        return package, f"{package} (not the pinned official bullmq {PINNED_VERSION})"
    return package, package


def commands_folder(module: ModuleType) -> Path | None:
    """The `commands` folder beside the imported package's `__init__`, where PyPI bullmq ships
    its Lua scripts; None when the module has no file to find it from."""
    init = getattr(module, "__file__", None)
    return None if init is None else Path(init).parent / "commands"


def installed_scripts() -> Path | None:
    """The `commands` folder of the `bullmq` this Python imports (`--scripts official`; the dev
    extra installs the pinned release), or None when there is no `bullmq` to import."""
    try:
        import bullmq
    except ImportError:
        return None
    module: ModuleType = bullmq
    return commands_folder(module)


def shipped_scripts(module: ModuleType, name: str) -> list[str]:
    """The `<name>-<numkeys>.lua` files the imported package ships in its `commands` folder,
    sorted; none when it has no such folder (or no file to find it from)."""
    folder = commands_folder(module)
    if folder is None:
        return []
    try:
        return sorted(path.name for path in folder.glob(f"{name}-*.lua"))
    except OSError:
        return []


def frozen_seconds(ms: int) -> float:
    """A float `s` with `round(s * 1000) == ms`, the way the package turns seconds into ms."""
    s = ms / 1000
    while round(s * 1000) < ms:
        s = math.nextafter(s, math.inf)
    while round(s * 1000) > ms:
        s = math.nextafter(s, -math.inf)
    return s


class _FrozenTime:
    """Stands in for the `time` module inside a bullmq module: `time()` is the op's clock."""

    def __init__(self, ms: int) -> None:
        self._now = frozen_seconds(ms)

    def time(self) -> float:
        """The op's clock in seconds."""
        return self._now

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@contextlib.contextmanager
def frozen_clock(ms: int | None) -> Iterator[None]:
    """Patch `time` in every module of `CLOCK_MODULES` (and of `OPTIONAL_CLOCK_MODULES` the
    package has) to read `ms`, then restore it."""
    if ms is None:
        yield
        return
    clock = _FrozenTime(ms)
    with contextlib.ExitStack() as stack:
        for name in (*CLOCK_MODULES, *OPTIONAL_CLOCK_MODULES):
            try:
                module = importlib.import_module(name)
            except ImportError:
                if name in OPTIONAL_CLOCK_MODULES:
                    continue
                raise CandidateError(f"the package has no {name} module; cannot inject the "
                                     "op's clock") from None
            if getattr(module, "time", None) is not time:
                raise CandidateError(f"{name} no longer reads the clock through `time`; "
                                     "cannot inject the op's clock")
            stack.enter_context(mock.patch.object(module, "time", clock))
        yield


def check_signature(method: Any, args: tuple[Any, ...], what: str) -> None:
    """CandidateError (one line) when `method`'s signature cannot take `args`."""
    try:
        signature = inspect.signature(method)
    except (TypeError, ValueError):
        return  # not introspectable: the call itself will tell
    try:
        signature.bind(*args)
    except TypeError as exc:
        raise CandidateError(f"{what}{signature} does not take the {len(args)} argument(s) the "
                             f"suite passes: {exc}") from None


def one_line(exc: BaseException) -> str:
    """The first line of an exception's message, or its type's name when it has none."""
    text = str(exc).strip()
    return text.splitlines()[0] if text else type(exc).__name__


def parent_key(parent: Any) -> Any:
    """`bullmq.utils.get_parent_key(parent)`, or None in a release without it."""
    try:
        from bullmq.utils import get_parent_key
    except ImportError:
        return None
    return get_parent_key(parent)


def finished_errors(scripts: Any) -> Callable[[int, dict[str, Any]], Any] | None:
    """`Scripts.finishedErrors` as (code, context) -> exception: it takes one dict in 2.x and
    later, `(code, jobId, command, state)` in older releases; None when it is missing."""
    method = getattr(scripts, "finishedErrors", None)
    if not callable(method):
        return None
    try:
        inspect.signature(method).bind({})
    except TypeError:
        return lambda code, context: method(code, context.get("jobId"), context.get("command"),
                                            context.get("state"))
    except ValueError:
        pass  # not introspectable: assume today's form
    return lambda code, context: method({**context, "code": code})


def error_code(scripts: Any, exc: BaseException, context: dict[str, Any]) -> int | None:
    """The script code behind an exception from `Scripts.finishedErrors`, or None.

    The package turns a negative script reply into an exception whose type and message depend
    only on the code and `context` (jobId, command, state, parentKey). This rebuilds the
    exception for each known code with the same context and compares; unknown codes are read
    from the "Unknown code N error" message.
    """
    finished = finished_errors(scripts)
    try:
        from bullmq.error_code import ErrorCode

        codes = [int(member.value) for member in ErrorCode]
    except ImportError:
        codes = []  # a release without the enum: only "Unknown code N" is read
    for code in codes:
        try:
            expected = finished(code, context) if finished is not None else None
        except Exception:
            break  # a finishedErrors of another kind: the exception stays unexplained
        if type(expected) is type(exc) and str(expected) == str(exc):
            return code
    match = _UNKNOWN_CODE.match(str(exc)) if isinstance(exc, TypeError) else None
    return int(match.group(1)) if match else None


class PackageError(Exception):
    """An exception the package raised during an op (kept for mapping back to a code)."""

    def __init__(self, cause: BaseException) -> None:
        self.cause = cause
        kind = type(cause).__name__
        super().__init__(f"{kind}: {one_line(cause)}" if str(cause).strip() else kind)


def code_or_raise(queue: Any, exc: PackageError, context: dict[str, Any], what: str) -> int:
    """The negative script code behind `exc` (`error_code`), else CandidateError naming `what`."""
    code = error_code(getattr(queue, "scripts", None), exc.cause, context)
    if code is None or code >= 0:
        raise CandidateError(f"{what} raised {exc}") from None
    return code


def takes(method: Any, args: tuple[Any, ...]) -> bool:
    """Whether `method` can be called with these positional arguments."""
    try:
        inspect.signature(method).bind(*args)
    except TypeError:
        return False
    except ValueError:  # no signature to read: let the call say
        return True
    return True


def as_is(reply: Any) -> Result:
    """A reply passed on unchanged: the runner compares it with the expected return and shows
    it."""
    return cast(Result, reply)
