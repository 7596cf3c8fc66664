"""Flows on the official PyPI `bullmq` client, for `bullmq-py` (bullmq_py.py).

- `add` with `opts.parent` is `Queue.add` (bullmq_py); `client_opts` gives it the options as
  the client takes them: the policy flags under their long names (failParentOnFailure,
  continueParentOnFailure, ignoreDependencyOnFailure, removeDependencyOnFailure; the client's
  `Job` copies them into the parent record and stores them short) and `de` as `deduplication`.
  A flag the installed `Job` does not read is a skip naming its source line, and so is a set of
  flags the `Job` refuses (more than one: the Node client refuses them too, validateOptions);
- `addFlow` is `FlowProducer.add(flow)` with every node in the vector's queue (`queueName`),
  its `jobId` as `opts.jobId` (the only custom id FlowProducer takes), on the clock frozen at
  the op's timestamp (each `Job` reads it for its timestamp). The result is the root's id, or
  the negative code of the error FlowProducer raises for the root (`code`);
- `addParentJob` is `Scripts.addParentJob(job)`, the call FlowProducer makes for a node with
  children, on a `Job` built as FlowProducer builds one (`{**opts, "parent": ...}`), on the
  frozen clock. FlowProducer itself adds a parent only together with its children; this is the
  same call without them. An op without a jobId is skipped: FlowProducer always gives a parent
  an id (`opts.jobId` or `uuid4().hex`), never one drawn from the queue's counter;
- `moveToWaitingChildren` is `Job.moveToWaitingChildren(token, {child})` on the clock frozen at
  the op's `now`. It loses nothing of the script's integer: `Scripts.moveToWaitingChildren`
  answers True for 0 and False for 1, and raises `finishedErrors` for a negative code, which is
  mapped back (`code_or_raise`), as for the other Job calls;
- `getDependencyCounts`, `removeChildDependency` and `removeUnprocessedChildren` are the Node
  client's `Job.getDependenciesCount({type: true...})` (its counts in the op's order),
  `Job.removeChildDependency()` (True 0, False 1, raised codes mapped back) and
  `Job.removeUnprocessedChildren()` (None). The pinned release has none of them: it ships
  getDependencyCounts-4.lua, removeChildDependency-1.lua and removeUnprocessedChildren-2.lua
  but neither loads them (`SCRIPT_DEFINITIONS`) nor calls them, so the ops are skipped, naming
  both source lines. A release whose Job has the method is driven through it.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any, Protocol

from conformance.candidates.clients.package import (
    PackageError,
    as_is,
    code_or_raise,
    parent_key,
    shipped_scripts,
)
from conformance.core.errors import CandidateError, CandidateSkipped
from reference_impl.ops import AddFlow, AddParentJob, Result
from reference_impl.worker_ops import (
    GetDependencyCounts,
    MoveToWaitingChildren,
    RemoveChildDependency,
    RemoveUnprocessedChildren,
)

#: The stored short name of each parent policy flag -> the option name the client takes.
POLICY_OPTIONS = {
    "fpof": "failParentOnFailure",
    "cpof": "continueParentOnFailure",
    "idof": "ignoreDependencyOnFailure",
    "rdof": "removeDependencyOnFailure",
}
#: What the client's Job raises for more than one policy flag.
_EXCLUSIVE = "cannot be used together"


class Host(Protocol):
    """What the flow ops need of the candidate (PythonClientCandidate)."""

    @property
    def _package(self) -> str: ...

    def _member(self, owner: Any, attr: str, what: str) -> Any: ...

    def _run(self, what: str, clock_ms: int | None, method: Any, *args: Any) -> Any: ...

    def _scripts(self, queue: Any) -> Any: ...

    def _flow_producer(self) -> Any: ...

    def _queue_named(self, qualified: str) -> str: ...

    def _job_handle(self, queue: Any, job_id: str, opts: dict[str, Any] | None = None
                    ) -> Any: ...


def source_line(obj: Any, text: str) -> str:
    """`<file>:<line>` of the first line of `obj`'s source holding `text` (of its definition
    when none does), for a skip reason; `obj`'s name when there is no source to read."""
    try:
        lines, start = inspect.getsourcelines(obj)
        path = inspect.getsourcefile(obj) or "?"
    except (OSError, TypeError):
        return getattr(obj, "__qualname__", repr(obj))
    if inspect.ismodule(obj):
        start = 1  # a module's lines are counted from 0, a definition's from its own line
    where = "/".join(path.replace("\\", "/").split("/")[-2:])  # bullmq/job.py
    for offset, line in enumerate(lines):
        if text in line:
            return f"{where}:{start + offset}"
    return f"{where}:{start}"


def client_opts(package: str, opts: Mapping[str, Any]) -> dict[str, Any]:
    """A vector's stored-form job opts as the client's `Queue.add`/`FlowProducer` take them:
    `de` as `deduplication`, each policy flag under its long name. A flag whose long name the
    installed `Job` does not read raises CandidateSkipped: passed on, it would be stored in
    the opts and silently left out of the parent record."""
    out: dict[str, Any] = {}
    for key, value in opts.items():
        if key == "de":
            out["deduplication"] = value
        elif key in POLICY_OPTIONS:
            long = POLICY_OPTIONS[key]
            _check_reads(package, long, key)
            out[long] = value
        else:
            out[key] = value
    return out


def _check_reads(package: str, option: str, short: str) -> None:
    import bullmq

    job_class = getattr(bullmq, "Job", None)
    init = getattr(job_class, "__init__", None)
    try:
        source = inspect.getsource(init) if init is not None else None
    except (OSError, TypeError):
        return  # no source to read: the state will tell
    if source is not None and option not in source:
        raise CandidateSkipped(f"{package}'s Job does not read {option} (the `{short}` of the "
                               f"parent record; Job.__init__ at {source_line(init, 'def ')})")


def refused_flags(package: str, exc: PackageError) -> CandidateSkipped | None:
    """The skip for the client's Job refusing the op's set of policy flags, or None when
    `exc` is another error."""
    cause = exc.cause
    if not (isinstance(cause, ValueError) and _EXCLUSIVE in str(cause)):
        return None
    import bullmq

    where = source_line(getattr(bullmq, "Job", None), _EXCLUSIVE)
    return CandidateSkipped(f"{package}'s Job refuses more than one parent policy flag "
                            f"({where}: {cause}); the Node client refuses them too "
                            "(Job.validateOptions)")


class FlowOps:
    """The flow op handlers, on the candidate's queue, FlowProducer and frozen clock."""

    def __init__(self, host: Host) -> None:
        self._host = host

    def handlers(self) -> dict[type, Callable[[Any, Any], Result]]:
        """Op type -> handler(queue, op)."""
        return {
            AddParentJob: self._add_parent,
            AddFlow: self._add_flow,
            MoveToWaitingChildren: self._wait_for_children,
            GetDependencyCounts: self._dependency_counts,
            RemoveChildDependency: self._unlink,
            RemoveUnprocessedChildren: self._remove_unprocessed,
        }

    def _add_parent(self, queue: Any, op: AddParentJob) -> Result:
        import bullmq

        host = self._host
        if op.job_id is None:
            producer_class = getattr(bullmq, "FlowProducer", None)
            where = source_line(getattr(producer_class, "addNode", None), "uuid4")
            raise CandidateSkipped(f"{host._package}'s FlowProducer always gives a parent an id "
                                   f"(opts.jobId or uuid4().hex, {where}); the op has none")
        job_class = host._member(bullmq, "Job", "Job")
        what = "Scripts.addParentJob"
        method = host._member(host._scripts(queue), "addParentJob", what)
        opts = client_opts(host._package, op.opts)
        opts["jobId"] = op.job_id
        # FlowProducer.addNode: the node's opts with `parent` set (None for a root).
        opts["parent"] = opts.get("parent")

        def add() -> Any:
            # Built inside the call: Job() reads the frozen clock for its timestamp.
            return method(job_class(queue, op.name, op.data, opts, op.job_id))

        try:
            reply = host._run(what, op.timestamp, add)
        except PackageError as exc:
            skip = refused_flags(host._package, exc)
            if skip is not None:
                raise skip from None
            raise CandidateError(f"{what} raised {exc}") from None
        # Scripts.addParentJob passes the script's reply on: the id, or a negative code.
        if isinstance(reply, str) or (isinstance(reply, int) and not isinstance(reply, bool)):
            return reply
        return as_is(reply)

    def _add_flow(self, queue: Any, op: AddFlow) -> Result:
        host = self._host
        producer = host._flow_producer()
        what = "FlowProducer.add"
        method = host._member(producer, "add", what)
        flow = self._node(queue, op.flow)
        try:
            tree = host._run(what, op.timestamp, method, flow)
        except PackageError as exc:
            skip = refused_flags(host._package, exc)
            if skip is not None:
                raise skip from None
            # FlowProducer raises the root's negative reply with the code attached.
            code = getattr(exc.cause, "code", None)
            if isinstance(code, int) and not isinstance(code, bool) and code < 0:
                return code
            context = {"parentKey": parent_key(flow["opts"].get("parent")), "command": "addJob"}
            return code_or_raise(queue, exc, context, what)
        job = tree.get("job") if isinstance(tree, dict) else None
        job_id = getattr(job, "id", None)
        if job_id is None:
            raise CandidateError(f"{what} returned {tree!r}, not a tree with a root job id")
        return str(job_id)

    def _node(self, queue: Any, node: Mapping[str, Any]) -> dict[str, Any]:
        """A vector's flow node as FlowProducer takes it: in the open queue or the node's own
        (`queue`, a qualified name), the id in opts."""
        opts = client_opts(self._host._package, node.get("opts", {}))
        opts["jobId"] = node["jobId"]
        name = self._host._queue_named(node["queue"]) if "queue" in node else queue.name
        out: dict[str, Any] = {"name": node["name"], "queueName": name,
                               "data": node.get("data", {}), "opts": opts}
        children = node.get("children", ())
        if children:
            out["children"] = [self._node(queue, child) for child in children]
        return out

    # -- a parent's dependencies -------------------------------------------------------------

    def _call(self, queue: Any, what: str, clock_ms: int | None, method: Any, *args: Any,
              context: dict[str, Any]) -> Any:
        """`method(*args)` on the clock; a raised script code comes back as that code."""
        try:
            return self._host._run(what, clock_ms, method, *args)
        except PackageError as exc:
            return code_or_raise(queue, exc, context, what)

    def _wait_for_children(self, queue: Any, op: MoveToWaitingChildren) -> Result:
        host = self._host
        what = "Job.moveToWaitingChildren"
        job = host._job_handle(queue, op.job_id)
        method = host._member(job, "moveToWaitingChildren", what)
        opts: dict[str, Any] = {} if op.child is None else {"child": dict(op.child)}
        context = {"jobId": op.job_id, "command": "moveToWaitingChildren", "state": "active"}
        reply = self._call(queue, what, op.now, method, op.token, opts, context=context)
        return _moved(reply)

    def _dependency_counts(self, queue: Any, op: GetDependencyCounts) -> Result:
        job = self._host._job_handle(queue, op.job_id)
        method = self._job_method(job, "getDependenciesCount", "getDependencyCounts")
        what = "Job.getDependenciesCount"
        # The Node client asks for the types set in its options, in their order.
        counts = self._call(queue, what, None, method, dict.fromkeys(op.types, True),
                            context={"jobId": op.job_id, "command": "getDependencyCounts"})
        if isinstance(counts, dict) and all(kind in counts for kind in op.types):
            return [counts[kind] for kind in op.types]
        return as_is(counts)

    def _unlink(self, queue: Any, op: RemoveChildDependency) -> Result:
        job = self._host._job_handle(queue, op.job_id)
        method = self._job_method(job, "removeChildDependency", "removeChildDependency")
        # The call reads the parent from the handle, as from a job read with its parentKey.
        job.parentKey = op.parent_key
        context = {"jobId": op.job_id, "parentKey": op.parent_key,
                   "command": "removeChildDependency"}
        return _moved(self._call(queue, "Job.removeChildDependency", None, method,
                                 context=context))

    def _remove_unprocessed(self, queue: Any, op: RemoveUnprocessedChildren) -> Result:
        job = self._host._job_handle(queue, op.job_id)
        method = self._job_method(job, "removeUnprocessedChildren", "removeUnprocessedChildren")
        context = {"jobId": op.job_id, "command": "removeUnprocessedChildren"}
        return as_is(self._call(queue, "Job.removeUnprocessedChildren", None, method,
                                context=context))

    def _job_method(self, job: Any, method: str, script: str) -> Any:
        """`job.<method>`, or CandidateSkipped naming where the installed release lacks it:
        its Job class, and the script table that would load the `script` it may ship."""
        import bullmq

        found = getattr(job, method, None)
        if found is not None:
            return found
        where = source_line(getattr(bullmq, "Job", None), "class Job")
        shipped = shipped_scripts(bullmq, script)
        if shipped:
            try:
                import bullmq.redis_connection as connection
            except ImportError:
                table = "its Scripts"
            else:
                table = f"SCRIPT_DEFINITIONS ({source_line(connection, 'SCRIPT_DEFINITIONS =')})"
            loads = f"; it ships {', '.join(shipped)} but {table} does not load it"
        else:
            loads = f"; it ships no {script} script"
        raise CandidateSkipped(f"{self._host._package} has no Job.{method} (class Job at "
                               f"{where}){loads}")


def _moved(reply: Any) -> Result:
    """A Job call's bool for the script's 0 (True) or 1 (False); a code or None as it came."""
    if isinstance(reply, bool):
        return 0 if reply else 1
    return as_is(reply)
