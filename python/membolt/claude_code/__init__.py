"""membolt for Claude Code (§13): memory through hooks, no code.

``membolt hook claude-code`` runs for every hook event (``hook.py``);
``membolt install claude-code`` writes the hooks and the MCP server into
Claude Code's settings (``install.py``). Nothing is imported here: a hook is a
new process per event, and each event imports only what it uses.
"""
