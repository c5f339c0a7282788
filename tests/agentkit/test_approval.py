"""Approval: a run stops before a call that waits for a decision, and resumes from its messages;
approved calls run once, denied ones go back to the model, and no call is lost or run twice."""

from __future__ import annotations

import collections
import functools
import json
from typing import Any

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from pydantic import Field

from agentkit import (
    Agent,
    Approval,
    ApprovalMismatch,
    CallAlreadyResumed,
    CallDenied,
    FinalResult,
    InvalidArgument,
    PendingCall,
    RunContext,
    messages_from_json,
    messages_to_json,
    tool,
)
from agentkit._loop import agent as _agent
from agentkit._loop.approvals import ResumedCalls
from runtimes.testing import ScriptedRuntime

RUNS: collections.Counter[str] = collections.Counter()


def call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    return {"name": name, "arguments": arguments}


def turn(*calls: dict[str, Any]) -> str:
    return "\n".join(json.dumps(c) for c in calls) if len(calls) > 1 else json.dumps(calls[0])


@tool(requires_approval=True, idempotent=False)
def send_money(to: str, amount: int) -> str:
    """Send money to someone."""
    RUNS[f"send_money:{to}:{amount}"] += 1
    return f"sent {amount} to {to}"


@tool(idempotent=False)
def balance(account: str) -> int:
    """An account's balance."""
    RUNS[f"balance:{account}"] += 1
    return 500


def decide(pending: PendingCall, decision: bool | str) -> Approval:
    """The `Approval` a person's yes, no, or reason for no makes."""
    if decision is True:
        return pending.approve()
    return pending.deny(decision or None)


@pytest.fixture(autouse=True)
def _fresh_counts() -> None:
    RUNS.clear()


async def test_a_run_stops_before_a_call_waiting_for_approval_and_resumes_once() -> None:
    rt = ScriptedRuntime([turn(call("send_money", {"to": "Ann", "amount": 20})), "Sent 20 to Ann."])
    agent = Agent([send_money], rt)
    paused = await agent.run("Send Ann 20")
    assert paused.output is None and RUNS == {}
    [pending] = paused.pending
    assert isinstance(pending, PendingCall) and pending.tool == "send_money"
    assert isinstance(pending.arguments, send_money.args_type) and pending.arguments.amount == 20
    assert paused.messages[-1]["tool_calls"][0]["id"] == pending.id
    done = await agent.run(message_history=paused.messages, approvals={pending.id: pending.approve()})
    assert done.output == "Sent 20 to Ann." and done.pending == []
    assert RUNS == {"send_money:Ann:20": 1}
    assert [m["tool_call_id"] for m in done.messages if m["role"] == "tool"] == [pending.id]
    with pytest.raises(InvalidArgument) as info:  # already answered: it cannot run again
        await agent.run(message_history=done.messages, approvals={pending.id: pending.approve()})
    assert info.value.argument == f"approvals[{pending.id!r}]"
    assert RUNS == {"send_money:Ann:20": 1}


async def test_a_denied_call_goes_back_to_the_model_with_the_reason() -> None:
    rt = ScriptedRuntime([turn(call("send_money", {"to": "Bob", "amount": 900})), "I did not send it."])
    agent = Agent([send_money], rt)
    paused = await agent.run("Send Bob 900")
    done = await agent.run(message_history=paused.messages,
                           approvals={paused.pending[0].id: paused.pending[0].deny("over the limit")})
    assert RUNS == {} and done.output == "I did not send it."
    [record] = done.tool_calls
    assert isinstance(record.error, CallDenied) and record.error.reason == "over the limit"
    assert "not approved: over the limit" in done.messages[-2]["content"]
    again = await Agent([send_money], ScriptedRuntime([turn(call("send_money", {"to": "C", "amount": 1})), "No."])
                        ).run("Send C 1")
    denied = await Agent([send_money], ScriptedRuntime(["No."])).run(
        message_history=again.messages, approvals={again.pending[0].id: again.pending[0].deny()})
    assert denied.tool_calls[0].error.reason is None and RUNS == {}


async def test_the_turns_other_calls_run_before_the_stop_and_not_again() -> None:
    both = turn(call("balance", {"account": "main"}), call("send_money", {"to": "Ann", "amount": 5}))
    rt = ScriptedRuntime([both, "Done."])
    agent = Agent([send_money, balance], rt)
    paused = await agent.run("Check the main balance and send Ann 5")
    assert RUNS == {"balance:main": 1} and [p.tool for p in paused.pending] == ["send_money"]
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert RUNS == {"balance:main": 1, "send_money:Ann:5": 1}
    answered = [m["tool_call_id"] for m in done.messages if m["role"] == "tool"]
    assert sorted(answered) == sorted(c["id"] for c in done.messages[1]["tool_calls"])


async def test_an_agent_level_predicate_and_its_checks() -> None:
    @tool(idempotent=False)
    def pay(amount: int) -> str:
        """Pay an amount."""
        RUNS[f"pay:{amount}"] += 1
        return "paid"

    rt = ScriptedRuntime([turn(call("pay", {"amount": 10})), turn(call("pay", {"amount": 1000})), "Paid both."])
    agent = Agent([pay], rt, requires_approval=lambda c: c.tool == "pay" and c.arguments.amount > 100)
    paused = await agent.run("Pay 10 then 1000")
    assert RUNS == {"pay:10": 1} and paused.pending[0].arguments.amount == 1000
    with pytest.raises(InvalidArgument) as info:
        await agent.run("go on", message_history=paused.messages, approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert info.value.argument == "prompt"
    with pytest.raises(InvalidArgument) as info:
        await agent.run(message_history=paused.messages)
    assert info.value.argument == "approvals"
    with pytest.raises(InvalidArgument):
        await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: "yes", "call_9_9": True})
    with pytest.raises(InvalidArgument):
        await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: 1})  # type: ignore[dict-item]
    assert RUNS == {"pay:10": 1}
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert done.output == "Paid both." and RUNS == {"pay:10": 1, "pay:1000": 1}
    with pytest.raises(InvalidArgument):
        Agent([pay], requires_approval=True)  # type: ignore[arg-type]


async def test_streaming_ends_with_the_paused_result() -> None:
    rt = ScriptedRuntime([turn(call("send_money", {"to": "Ann", "amount": 3})), "Ok."])
    agent = Agent([send_money], rt)
    events = [e async for e in agent.run_stream("Send Ann 3")]
    assert isinstance(events[-1], FinalResult) and events[-1].result.pending[0].arguments.to == "Ann"
    resumed = [e async for e in agent.run_stream(message_history=events[-1].result.messages,
                                                 approvals={events[-1].result.pending[0].id:
                                                            events[-1].result.pending[0].approve()})]
    assert resumed[-1].result.output == "Ok." and RUNS == {"send_money:Ann:3": 1}


@given(plan=st.lists(st.tuples(st.booleans(), st.sampled_from([True, False, "no"])), min_size=1, max_size=4))
@settings(max_examples=40, deadline=None)
def test_every_call_is_answered_once_and_runs_at_most_once(plan: list[tuple[bool, bool | str]]) -> None:
    """Whatever calls wait and whatever is decided: each call gets exactly one tool message;
    a call that needs no approval, or is approved, runs once; a denied one never runs."""
    RUNS.clear()
    calls = [call("send_money" if held else "balance", {"to": f"p{i}", "amount": i} if held else {"account": f"a{i}"})
             for i, (held, _) in enumerate(plan)]
    rt = ScriptedRuntime([turn(*calls), "Done."])
    agent = Agent([send_money, balance], rt, max_calls_per_turn=4, answer_on_repeat=False, grounded_arguments=False)
    result = agent.run_sync("go")
    decisions = {p.id: decide(p, plan[int(p.arguments.to[1:])][1]) for p in result.pending}
    if result.pending:
        result = agent.run_sync(message_history=result.messages, approvals=decisions)
    assert result.output == "Done."
    ids = [c["id"] for c in result.messages[1]["tool_calls"]]
    answered = [m["tool_call_id"] for m in result.messages if m["role"] == "tool"]
    assert sorted(answered) == sorted(ids)
    expected = collections.Counter()
    for i, (held, decision) in enumerate(plan):
        if not held:
            expected[f"balance:a{i}"] += 1
        elif decision is True:
            expected[f"send_money:p{i}:{i}"] += 1
    assert RUNS == expected


async def test_call_ids_stay_unique_across_a_resumed_conversation() -> None:
    first = turn(call("send_money", {"to": "Ann", "amount": 1}))
    second = turn(call("send_money", {"to": "Ann", "amount": 2}))
    rt = ScriptedRuntime([first, second, "Both sent."])
    agent = Agent([send_money], rt)
    paused = await agent.run("Send Ann 1, then 2")
    again = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert again.pending and again.pending[0].id != paused.pending[0].id
    done = await agent.run(message_history=again.messages, approvals={again.pending[0].id: again.pending[0].approve()})
    ids = [c["id"] for m in done.messages for c in m.get("tool_calls", [])]
    assert len(ids) == len(set(ids)) == 2
    assert RUNS == {"send_money:Ann:1": 1, "send_money:Ann:2": 1} and done.output == "Both sent."


async def test_a_turn_that_goes_in_circles_and_waits_loses_no_call() -> None:
    """A turn that repeats a success (which would end the run with an answer) and holds a call
    that waits: the run stops, and the waiting call is still there to decide."""
    again = turn(call("balance", {"account": "main"}), call("send_money", {"to": "Ann", "amount": 5}))

    @tool
    def steady_balance(account: str) -> int:
        """An account's balance."""
        RUNS[f"steady:{account}"] += 1
        return 500

    first = turn(call("steady_balance", {"account": "main"}))
    second = again.replace('"balance"', '"steady_balance"')
    rt = ScriptedRuntime([first, second, "Done."])
    agent = Agent([send_money, steady_balance], rt)
    paused = await agent.run("Check the main balance twice, then send Ann 5")
    assert [p.tool for p in paused.pending] == ["send_money"] and paused.messages[-1]["role"] == "tool"
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: paused.pending[0].approve()})
    assert done.output == "Done." and RUNS["send_money:Ann:5"] == 1 and RUNS["steady:main"] == 1


async def test_a_history_cut_by_an_error_continues_as_before() -> None:
    """Calls left unanswered by a run that stopped on an error, none of which needs approval,
    do not make the history wait: it continues with a prompt."""
    cut = [{"role": "user", "content": "Balance?"},
           {"role": "assistant", "content": turn(call("balance", {"account": "main"})),
            "tool_calls": [{"id": "call_1_1", "type": "function",
                            "function": {"name": "balance", "arguments": '{"account": "main"}'}}]}]
    result = await Agent([balance, send_money], ScriptedRuntime(["Sorry, try again."])).run("Again?", message_history=cut)
    assert result.output == "Sorry, try again." and RUNS == {}
    with pytest.raises(InvalidArgument):  # decisions for calls that wait for none are still checked
        await Agent([balance], ScriptedRuntime([])).run(message_history=cut, approvals={"call_9_9": True})


@pytest.mark.parametrize("history", [["not a message"], [{"role": "user", "content": "x"}, 3]])
async def test_a_history_that_is_no_message_list_is_named(history: list[Any]) -> None:
    with pytest.raises(InvalidArgument) as info:
        await Agent([balance], ScriptedRuntime([])).run("go", message_history=history)
    assert info.value.argument.startswith("message_history")


# --- issue #65: approvals bind to the call as shown, once -----------------------------------------


@tool
def delete_all() -> str:
    """Delete everything (needs no approval: the stored call may not become it)."""
    RUNS["delete_all"] += 1
    return "deleted"


async def paused_run() -> tuple[Agent[str], PendingCall, str]:
    """A run paused before `send_money(Ann, 20)`: the agent, its pending call, the stored JSON."""
    agent = Agent([send_money, balance, delete_all],
                  ScriptedRuntime([turn(call("send_money", {"to": "Ann", "amount": 20})), "Sent."]))
    paused = await agent.run("Send Ann 20")
    return agent, paused.pending[0], messages_to_json(paused.messages)


@pytest.mark.parametrize("decision", [True, False, "over the limit", 1, None])
async def test_a_bare_decision_is_refused_saying_how_to_approve(decision: Any) -> None:
    agent, pending, stored = await paused_run()
    with pytest.raises(InvalidArgument) as info:
        await agent.run(message_history=messages_from_json(stored), approvals={pending.id: decision})
    assert info.value.argument == f"approvals[{pending.id!r}]" and "pending.approve()" in info.value.reason
    assert RUNS == {}


@pytest.mark.parametrize("edit", [
    {"arguments": '{"to": "Mallory", "amount": 99999}'},
    {"name": "delete_all", "arguments": "{}"},
    {"name": "balance", "arguments": '{"account": "Ann"}'},
    {"arguments": '{"to": "Ann", "amount": 20, "extra": 1}'},
])
async def test_a_stored_call_edited_after_approval_runs_nothing(edit: dict[str, str]) -> None:
    agent, pending, stored = await paused_run()
    approval = pending.approve()
    history = messages_from_json(stored)
    history[-1]["tool_calls"][0]["function"].update(edit)
    with pytest.raises(ApprovalMismatch) as info:
        await agent.run(message_history=history, approvals={pending.id: approval})
    assert info.value.call_id == pending.id and isinstance(info.value, InvalidArgument)
    assert RUNS == {}
    done = await agent.run(message_history=messages_from_json(stored), approvals={pending.id: approval})
    assert done.output == "Sent." and RUNS == {"send_money:Ann:20": 1}  # the unedited call still runs, once


async def test_an_approval_of_another_call_is_refused() -> None:
    agent, pending, stored = await paused_run()
    _, other, _ = await paused_run()
    with pytest.raises(ApprovalMismatch):
        await agent.run(message_history=messages_from_json(stored), approvals={pending.id: other.approve()})
    forged = Approval(pending.id, other.digest, True)  # the right id, another call's digest
    other_history = messages_from_json(stored)
    other_history[-1]["tool_calls"][0]["function"]["arguments"] = '{"to": "Ann", "amount": 21}'
    with pytest.raises(ApprovalMismatch):
        await agent.run(message_history=other_history, approvals={pending.id: forged})
    assert RUNS == {}
    with pytest.raises(InvalidArgument) as info:
        Approval(pending.id, pending.digest, "yes")  # type: ignore[arg-type]
    assert info.value.argument == "Approval.approved"


async def test_the_tool_runs_with_the_arguments_shown_and_no_default_is_made_again() -> None:
    made = iter(range(1000, 2000))
    ran: list[tuple[str, int]] = []

    @tool(requires_approval=True, idempotent=False)
    def transfer(to: str, reference: int = Field(default_factory=lambda: next(made))) -> str:
        """Send money, under a reference made for it."""
        ran.append((to, reference))
        return "sent"

    agent = Agent([transfer], ScriptedRuntime([turn(call("transfer", {"to": "Ann"})), "Sent."]))
    paused = await agent.run("Send Ann money")
    [pending] = paused.pending
    assert pending.shown == {"to": "Ann", "reference": 1000} and pending.arguments.reference == 1000
    stored = json.loads(messages_to_json(paused.messages))[-1]["tool_calls"][0]
    assert json.loads(stored["function"]["arguments"]) == pending.shown and stored["awaits_approval"] is True
    await agent.run(message_history=messages_from_json(messages_to_json(paused.messages)),
                    approvals={pending.id: pending.approve()})
    assert ran == [("Ann", 1000)]


async def test_call_ids_differ_across_conversations() -> None:
    ids = set()
    for _ in range(3):
        _, pending, _ = await paused_run()
        ids.add(pending.id)
    assert len(ids) == 3


@pytest.mark.parametrize("fresh_agent", [False, True])
async def test_resuming_the_same_stored_conversation_twice_runs_the_call_once(fresh_agent: bool) -> None:
    agent, pending, stored = await paused_run()
    approval = pending.approve()
    await agent.run(message_history=messages_from_json(stored), approvals={pending.id: approval})
    again = Agent([send_money, balance, delete_all], ScriptedRuntime(["Sent."])) if fresh_agent else agent
    with pytest.raises(CallAlreadyResumed) as info:
        await again.run(message_history=messages_from_json(stored), approvals={pending.id: approval})
    assert info.value.call_id == pending.id
    with pytest.raises(CallAlreadyResumed):  # a denial of it too: it was decided once
        await again.run(message_history=messages_from_json(stored), approvals={pending.id: pending.deny()})
    assert RUNS == {"send_money:Ann:20": 1}


async def test_a_refused_resume_can_be_tried_again() -> None:
    agent, pending, stored = await paused_run()
    with pytest.raises(InvalidArgument):
        await agent.run(message_history=messages_from_json(stored), approvals={pending.id: True})  # type: ignore[dict-item]
    done = await agent.run(message_history=messages_from_json(stored), approvals={pending.id: pending.approve()})
    assert done.output == "Sent." and RUNS == {"send_money:Ann:20": 1}


async def test_the_idempotency_key_is_the_same_on_every_resume(monkeypatch: pytest.MonkeyPatch) -> None:
    keys: list[str] = []

    @tool(requires_approval=True, idempotent=False)
    def pay(amount: int, ctx: RunContext[None]) -> str:
        """Pay an amount."""
        keys.append(ctx.idempotency_key)
        return "paid"

    @tool
    def look(x: int, ctx: RunContext[None]) -> str:
        """Look."""
        keys.append(ctx.idempotency_key)
        return "seen"

    both = turn(call("look", {"x": 1}), call("pay", {"amount": 5}))
    agent = Agent([pay, look], ScriptedRuntime([both, "Paid.", "Paid."]), grounded_arguments=False)
    paused = await agent.run("Pay 5")
    stored = messages_to_json(paused.messages)
    for _ in range(2):  # two processes, each resuming the same stored conversation
        monkeypatch.setattr(_agent, "RESUMED", ResumedCalls())
        await agent.run(message_history=messages_from_json(stored), approvals={paused.pending[0].id: paused.pending[0].approve()})
    looked, paid, paid_again = keys
    assert paid == paid_again and looked != paid and len(paid) == 32


async def test_a_call_held_by_the_predicate_keeps_waiting_and_is_not_asked_again() -> None:
    asked: list[str] = []

    @tool(idempotent=False)
    def pay(amount: int) -> str:
        """Pay an amount."""
        RUNS[f"pay:{amount}"] += 1
        return "paid"

    def costly(pending: PendingCall) -> bool:
        asked.append(pending.id)
        return len(asked) == 1  # would let the call through if asked again

    agent = Agent([pay], ScriptedRuntime([turn(call("pay", {"amount": 1000})), "Paid."]), requires_approval=costly)
    paused = await agent.run("Pay 1000")
    [pending] = paused.pending
    history = messages_from_json(messages_to_json(paused.messages))
    with pytest.raises(InvalidArgument) as info:
        await agent.run(message_history=history)
    assert info.value.argument == "approvals" and pending.id in info.value.reason
    with pytest.raises(InvalidArgument) as info:
        await agent.run("go on", message_history=history)
    assert info.value.argument == "prompt" and pending.id in info.value.reason
    assert asked == [pending.id] and RUNS == {}
    done = await agent.run(message_history=history, approvals={pending.id: pending.approve()})
    assert done.output == "Paid." and RUNS == {"pay:1000": 1} and asked == [pending.id]


@pytest.mark.parametrize("as_text", [True, False])
async def test_stored_arguments_nested_past_the_bound_are_named_not_recursed(as_text: bool) -> None:
    deep: Any = functools.reduce(lambda inner, _: {"a": inner}, range(5000), {})
    arguments = "[" * 5000 + "]" * 5000 if as_text else deep
    history = [{"role": "user", "content": "Send"},
               {"role": "assistant", "content": "...", "tool_calls": [
                   {"id": "call_x_1_1", "type": "function", "awaits_approval": True,
                    "function": {"name": "send_money", "arguments": arguments}}]}]
    with pytest.raises(InvalidArgument) as info:
        await Agent([send_money], ScriptedRuntime(["ok"])).run(message_history=history, approvals={})
    assert info.value.argument == "message_history[1].tool_calls[0].function.arguments"
    assert "levels" in info.value.reason and RUNS == {}


EDITS = st.one_of(
    st.tuples(st.just("name"), st.sampled_from(["balance", "delete_all", "send", "send_money "])),
    st.tuples(st.just("arguments"), st.dictionaries(
        st.sampled_from(["to", "amount", "account", "memo"]),
        st.one_of(st.integers(-5, 30), st.sampled_from(["Ann", "Mallory", "ann", ""]), st.booleans(), st.none()),
        max_size=4)),
    st.tuples(st.just("text"), st.text(max_size=20)),
)


@given(edit=st.none() | EDITS)
@settings(max_examples=60, deadline=None)
def test_an_approval_resumes_only_the_call_shown(edit: tuple[str, Any] | None) -> None:
    """Whatever edit is made to the stored call's name or arguments after approval, the resume
    raises a typed error and nothing runs; with none, the call runs exactly once, as shown."""
    RUNS.clear()
    agent = Agent([send_money, balance, delete_all],
                  ScriptedRuntime([turn(call("send_money", {"to": "Ann", "amount": 20})), "Sent."]))
    paused = agent.run_sync("Send Ann 20")
    [pending] = paused.pending
    approval = pending.approve()
    history = messages_from_json(messages_to_json(paused.messages))
    function = history[-1]["tool_calls"][0]["function"]
    if edit is not None:
        kind, value = edit
        if kind == "name":
            function["name"] = value
        else:
            function["arguments"] = value if kind == "text" else json.dumps(value)
            assume(kind == "text" or value != pending.shown)
            assume(kind != "text" or _not_json_of(value, pending.shown))
    if edit is None:
        done = agent.run_sync(message_history=history, approvals={pending.id: approval})
        assert done.output == "Sent." and RUNS == {"send_money:Ann:20": 1}
        return
    with pytest.raises(InvalidArgument):
        agent.run_sync(message_history=history, approvals={pending.id: approval})
    assert RUNS == {}


def _not_json_of(text: str, value: Any) -> bool:
    try:
        return json.loads(text) != value
    except ValueError:
        return True
