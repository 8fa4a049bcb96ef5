"""The exported tool schemas, checked by the client SDKs' own types and the
checks they run locally before a request (§4): OpenAI Chat
Completions (plain and strict), the Responses API, Anthropic tool use.

A model in OpenAI's strict mode sends every argument, ``null`` for an
optional one it leaves unset; the round trips below take the SDK's parsed
arguments to the dispatcher as they are.
"""

from __future__ import annotations

import copy
import json
from typing import Any

import pytest

from membolt import MemoryStore
from membolt.agent import AgentMemory
from membolt.tools import TOOL_NAMES, TOOLS, tool_schemas

openai = pytest.importorskip("openai")
anthropic = pytest.importorskip("anthropic")
pydantic = pytest.importorskip("pydantic")
jsonschema = pytest.importorskip("jsonschema")


def typed_dict_keys(typed_dict: Any) -> tuple[frozenset[str], frozenset[str]]:
    """(required keys, every key) of a TypedDict."""
    required = frozenset(typed_dict.__required_keys__)
    return required, required | frozenset(typed_dict.__optional_keys__)


def assert_is_typed_dict(value: dict[str, Any], typed_dict: Any) -> None:
    """``value`` validates as ``typed_dict``, with every required key and no
    key the type does not know (pydantic alone would ignore extra keys)."""
    pydantic.TypeAdapter(typed_dict).validate_python(value)
    required, known = typed_dict_keys(typed_dict)
    assert required <= set(value) <= known, (set(value), required, known)


# ----- OpenAI Chat Completions ------------------------------------------------------


def test_openai_plain_tools_are_chat_completion_tool_params() -> None:
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    for tool in tool_schemas("openai"):
        assert_is_typed_dict(tool, ChatCompletionFunctionToolParam)
        assert_is_typed_dict(tool["function"], FunctionDefinition)
        assert "strict" not in tool["function"]


def test_openai_strict_tools_pass_the_sdk_local_check() -> None:
    from openai.lib._parsing._completions import validate_input_tools
    from openai.types.chat import ChatCompletionFunctionToolParam
    from openai.types.shared_params import FunctionDefinition

    strict = tool_schemas("openai", strict=True)
    # The check chat.completions.parse() runs before sending: it refuses
    # tools that are not strict (here: the plain ones) ...
    with pytest.raises(ValueError, match="is not strict"):
        validate_input_tools(tool_schemas("openai"))
    # ... and takes these.
    assert validate_input_tools(strict) == strict
    for tool in strict:
        assert_is_typed_dict(tool, ChatCompletionFunctionToolParam)
        assert_is_typed_dict(tool["function"], FunctionDefinition)
        assert tool["function"]["strict"] is True


def test_strict_parameters_are_what_the_sdk_makes_strict() -> None:
    """The SDK's own strict-schema transform (used by pydantic_function_tool)
    leaves each strict schema unchanged: nothing is left to fix."""
    from openai.lib._pydantic import _ensure_strict_json_schema

    for tool in tool_schemas("openai", strict=True):
        parameters = tool["function"]["parameters"]
        fixed = _ensure_strict_json_schema(copy.deepcopy(parameters), path=(), root={})
        assert fixed == parameters
        assert parameters["additionalProperties"] is False
        assert parameters["required"] == list(parameters["properties"])


def test_strict_optional_arguments_are_nullable_and_required() -> None:
    strict = {
        t["function"]["name"]: t["function"]["parameters"]
        for t in tool_schemas("openai", strict=True)
    }
    plain = {t.name: t.parameters for t in TOOLS}
    for name, parameters in strict.items():
        for argument, schema in parameters["properties"].items():
            original = plain[name]["properties"][argument]
            if argument in plain[name]["required"]:
                assert schema == original
            else:
                assert schema == {**original, "type": [original["type"], "null"]}
    assert strict["memory_query"]["properties"]["limit"]["type"] == ["integer", "null"]
    assert strict["memory_save"]["properties"]["type"]["type"] == ["string", "null"]
    # The JSON schema itself: null accepted, omission refused.
    jsonschema.validate({"query": "memory", "limit": None}, strict["memory_query"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "memory"}, strict["memory_query"])
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate({"query": "memory", "limit": None, "x": 1}, strict["memory_query"])


def chat_completion(calls: list[tuple[str, dict[str, Any]]]) -> Any:
    from openai.types.chat import ChatCompletion

    return ChatCompletion.model_validate(
        {
            "id": "chatcmpl-test",
            "object": "chat.completion",
            "created": 0,
            "model": "test-model",
            "choices": [
                {
                    "index": 0,
                    "finish_reason": "tool_calls",
                    "message": {
                        "role": "assistant",
                        "content": None,
                        "tool_calls": [
                            {
                                "id": f"call_{i}",
                                "type": "function",
                                "function": {"name": name, "arguments": json.dumps(arguments)},
                            }
                            for i, (name, arguments) in enumerate(calls)
                        ],
                    },
                }
            ],
        }
    )


def test_strict_round_trip_through_the_sdk_parser(store: MemoryStore) -> None:
    """Tool calls as a strict model sends them, parsed by the SDK's
    chat.completions.parse() machinery, run by the dispatcher."""
    from openai.lib._parsing._completions import parse_chat_completion

    memory = AgentMemory(store)
    tools = memory.tool_schemas("openai", strict=True)
    completion = chat_completion(
        [
            ("memory_save", {"key": "decision:db", "value": "use redb", "type": None}),
            ("memory_save", {"key": "db2", "value": "sqlite", "type": "decision"}),
            ("memory_query", {"query": "map(memory, .type)", "limit": None}),
            ("memory_list", {}),
        ]
    )
    parsed = parse_chat_completion(
        response_format=openai.omit, input_tools=tools, chat_completion=completion
    )
    outputs = [
        memory.call_tool(call.function.name, call.function.parsed_arguments)
        for call in parsed.choices[0].message.tool_calls
    ]
    assert outputs == [
        'Saved memory entry "decision:db" (8 bytes)',
        'Saved memory entry "db2" (6 bytes)',
        '["decision", "decision"]',
        "2 memory entries:\n- db2\n- decision:db\n",
    ]


# ----- OpenAI Responses API -----------------------------------------------------------


@pytest.mark.parametrize("strict", [False, True])
def test_responses_tools_are_flat_function_tools(strict: bool) -> None:
    from openai.types.responses import FunctionTool, FunctionToolParam

    tools = tool_schemas("responses", strict=strict)
    assert [t["name"] for t in tools] == list(TOOL_NAMES)
    chat = {t["function"]["name"]: t["function"] for t in tool_schemas("openai", strict=strict)}
    for tool in tools:
        assert set(tool) == {"type", "name", "description", "parameters", "strict"}
        assert tool["type"] == "function"
        assert tool["strict"] is strict
        assert tool["parameters"] == chat[tool["name"]]["parameters"]
        assert tool["description"] == chat[tool["name"]]["description"]
        assert_is_typed_dict(tool, FunctionToolParam)
        FunctionTool.model_validate(tool)


def test_responses_strict_round_trip_through_the_sdk_parser(store: MemoryStore) -> None:
    from openai.lib._parsing._responses import parse_function_tool_arguments
    from openai.types.responses import ResponseFunctionToolCall

    memory = AgentMemory(store)
    tools = memory.tool_schemas("responses", strict=True)
    call = ResponseFunctionToolCall.model_validate(
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "memory_save",
            "arguments": json.dumps({"key": "progress:api", "value": "half", "type": None}),
        }
    )
    arguments = parse_function_tool_arguments(input_tools=tools, function_call=call)
    assert arguments == {"key": "progress:api", "value": "half", "type": None}
    assert memory.call_tool(call.name, arguments) == 'Saved memory entry "progress:api" (4 bytes)'  # type: ignore[arg-type]
    assert store.get("progress:api").type == "progress"  # type: ignore[union-attr]


# ----- Anthropic --------------------------------------------------------------------------


def test_anthropic_tools_are_tool_params() -> None:
    from anthropic.types import ToolParam

    for tool in tool_schemas("anthropic"):
        assert_is_typed_dict(tool, ToolParam)
        assert tool["input_schema"]["type"] == "object"


def test_agent_memory_passes_format_and_strict_through(store: MemoryStore) -> None:
    memory = AgentMemory(store)
    for fmt in ("openai", "responses"):
        for strict in (False, True):
            assert memory.tool_schemas(fmt, strict=strict) == tool_schemas(fmt, strict=strict)  # type: ignore[arg-type]
    assert memory.tool_schemas("anthropic") == tool_schemas("anthropic")


@pytest.mark.parametrize("fmt", ["anthropic", "mcp"])
def test_strict_is_an_openai_option(fmt: str) -> None:
    with pytest.raises(ValueError, match="strict=True is an option of the OpenAI formats"):
        tool_schemas(fmt, strict=True)  # type: ignore[arg-type]
