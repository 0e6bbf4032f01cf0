"""Batch runs: many ``fix`` runs at once, locally or on Ray, under one hard budget.

Layering: ``batch`` sits above ``run`` (each task is an ordinary ``run_fix``) and below ``cli``.
"""
