"""Reusable widgets of the console."""
