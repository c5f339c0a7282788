"""Approval: a run stops before a call that waits for a decision, and resumes from its messages;
approved calls run once, denied ones go back to the model, and no call is lost or run twice."""

from __future__ import annotations

import collections
import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from agentkit import Agent, CallDenied, FinalResult, InvalidArgument, PendingCall, tool
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
    done = await agent.run(message_history=paused.messages, approvals={pending.id: True})
    assert done.output == "Sent 20 to Ann." and done.pending == []
    assert RUNS == {"send_money:Ann:20": 1}
    assert [m["tool_call_id"] for m in done.messages if m["role"] == "tool"] == [pending.id]
    with pytest.raises(InvalidArgument) as info:  # already answered: it cannot run again
        await agent.run(message_history=done.messages, approvals={pending.id: True})
    assert info.value.argument == f"approvals[{pending.id!r}]"
    assert RUNS == {"send_money:Ann:20": 1}


async def test_a_denied_call_goes_back_to_the_model_with_the_reason() -> None:
    rt = ScriptedRuntime([turn(call("send_money", {"to": "Bob", "amount": 900})), "I did not send it."])
    agent = Agent([send_money], rt)
    paused = await agent.run("Send Bob 900")
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: "over the limit"})
    assert RUNS == {} and done.output == "I did not send it."
    [record] = done.tool_calls
    assert isinstance(record.error, CallDenied) and record.error.reason == "over the limit"
    assert "not approved: over the limit" in done.messages[-2]["content"]
    again = await Agent([send_money], ScriptedRuntime([turn(call("send_money", {"to": "C", "amount": 1})), "No."])
                        ).run("Send C 1")
    denied = await Agent([send_money], ScriptedRuntime(["No."])).run(
        message_history=again.messages, approvals={again.pending[0].id: False})
    assert denied.tool_calls[0].error.reason is None and RUNS == {}


async def test_the_turns_other_calls_run_before_the_stop_and_not_again() -> None:
    both = turn(call("balance", {"account": "main"}), call("send_money", {"to": "Ann", "amount": 5}))
    rt = ScriptedRuntime([both, "Done."])
    agent = Agent([send_money, balance], rt)
    paused = await agent.run("Check and send")
    assert RUNS == {"balance:main": 1} and [p.tool for p in paused.pending] == ["send_money"]
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: True})
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
        await agent.run("go on", message_history=paused.messages, approvals={paused.pending[0].id: True})
    assert info.value.argument == "prompt"
    with pytest.raises(InvalidArgument) as info:
        await agent.run(message_history=paused.messages)
    assert info.value.argument == "approvals"
    with pytest.raises(InvalidArgument):
        await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: "yes", "call_9_9": True})
    with pytest.raises(InvalidArgument):
        await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: 1})  # type: ignore[dict-item]
    assert RUNS == {"pay:10": 1}
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: True})
    assert done.output == "Paid both." and RUNS == {"pay:10": 1, "pay:1000": 1}
    with pytest.raises(InvalidArgument):
        Agent([pay], requires_approval=True)  # type: ignore[arg-type]


async def test_streaming_ends_with_the_paused_result() -> None:
    rt = ScriptedRuntime([turn(call("send_money", {"to": "Ann", "amount": 3})), "Ok."])
    agent = Agent([send_money], rt)
    events = [e async for e in agent.run_stream("Send Ann 3")]
    assert isinstance(events[-1], FinalResult) and events[-1].result.pending[0].arguments.to == "Ann"
    resumed = [e async for e in agent.run_stream(message_history=events[-1].result.messages,
                                                 approvals={events[-1].result.pending[0].id: True})]
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
    agent = Agent([send_money, balance], rt, max_calls_per_turn=4, answer_on_repeat=False)
    result = agent.run_sync("go")
    decisions = {p.id: plan[int(p.arguments.to[1:])][1] for p in result.pending}
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
    paused = await agent.run("Send 1 then 2")
    again = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: True})
    assert again.pending and again.pending[0].id != paused.pending[0].id
    done = await agent.run(message_history=again.messages, approvals={again.pending[0].id: True})
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
    paused = await agent.run("Check twice, then send")
    assert [p.tool for p in paused.pending] == ["send_money"] and paused.messages[-1]["role"] == "tool"
    done = await agent.run(message_history=paused.messages, approvals={paused.pending[0].id: True})
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
