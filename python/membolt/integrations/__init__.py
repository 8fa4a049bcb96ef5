"""membolt behind the memory interfaces of agent frameworks.

Each adapter is an optional extra and a thin mapping onto membolt's public
API (:class:`membolt.MemoryStore`); none of them holds a membolt rule of its
own, and each is checked with the framework's own test suite
(``tests/peer/``):

* :mod:`membolt.integrations.langgraph` (``pip install 'membolt[langgraph]'``):
  :class:`~membolt.integrations.langgraph.MemboltStore` and
  :class:`~membolt.integrations.langgraph.AsyncMemboltStore`, LangGraph's
  ``BaseStore``.
* :mod:`membolt.integrations.anthropic` (``pip install 'membolt[anthropic]'``):
  :class:`~membolt.integrations.anthropic.MemboltMemoryTool` and
  :class:`~membolt.integrations.anthropic.AsyncMemboltMemoryTool`, the
  Anthropic SDK's memory tool (``BetaAbstractMemoryTool``).

Importing this package imports neither framework.
"""
