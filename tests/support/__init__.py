"""Helpers of the test suite (not tests): the plain-Python model of the
renderer, the worker script of the multi-process tests, and the fixture
store files."""
