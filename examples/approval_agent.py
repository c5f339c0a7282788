"""An agent whose money transfer waits for a person's approval, stored and resumed from JSON.

    python examples/approval_agent.py ["Send 20 euros to Ann for the concert tickets."]

Runs on the embedded default model. `send_money` is built with `requires_approval=True`, so the
run stops before running it and lists the call in `result.pending`, with the arguments it will
run with (`call.shown`). The conversation is stored as JSON (`messages_to_json`), loaded back
(`messages_from_json`) and resumed with a decision bound to the call as shown
(`call.approve()`, `call.deny(reason)`): approved, the call runs once, with those arguments; a
repeat of an approved transfer is denied with a reason the model reads. The tool keys each
transfer by `ctx.idempotency_key`, so a resume that reached it twice would not pay twice. The
run forces the tool for its first turn (`tool_choice="send_money"`) and uses its own model
settings.
"""

from __future__ import annotations

import sys

from agentkit import Agent, Approval, RunContext, RunError, messages_from_json, messages_to_json, tool

SENT: dict[str, str] = {}  # idempotency key: transfer; in an application, a table with a unique key


@tool(requires_approval=True, idempotent=False)
def send_money(to: str, amount_eur: int, ctx: RunContext[None]) -> str:
    """Send money to someone.

    Args:
        to: Who receives it, by first name.
        amount_eur: How many euros to send.
    """
    if ctx.idempotency_key in SENT:
        return "already sent"
    SENT[ctx.idempotency_key] = f"{amount_eur} EUR to {to}"
    return f"sent {amount_eur} EUR to {to}"


agent = Agent([send_money], system_prompt="You move money for the user. Then confirm in one sentence.",
              max_steps=3, max_tokens=96, max_calls_per_turn=1)


def main(request: str) -> None:
    print(f"user: {request}")
    approved: set[tuple[str, int]] = set()
    try:
        result = agent.run_sync(request, tool_choice="send_money", model_settings={"temperature": 0.0, "seed": 7})
        for _ in range(2):  # a small model often asks again: a person decides each time
            if not result.pending:
                break
            decisions: dict[str, Approval] = {}
            for call in result.pending:
                key = (call.arguments.to, call.arguments.amount_eur)
                decision = call.approve() if key not in approved else call.deny("already sent; do not send it again")
                decisions[call.id] = decision
                approved.add(key)
                verdict = "approved" if decision.approved else f"denied: {decision.reason}"
                print(f"waiting for approval: {call.id} {call.tool}({call.shown}) -> {verdict}")
            stored = messages_to_json(result.messages)
            print(f"(conversation stored as {len(stored)} characters of JSON, then loaded to resume)")
            result = agent.run_sync(message_history=messages_from_json(stored), approvals=decisions)
        print(f"answer: {result.output.strip()}" if result.output else f"still waiting: {result.pending}")
    except RunError as error:
        print(f"stopped: {type(error).__name__}: {error}")
    print(f"transfers made: {list(SENT.values())}")


if __name__ == "__main__":
    main(" ".join(sys.argv[1:]) or "Send 20 euros to Ann for the concert tickets.")
