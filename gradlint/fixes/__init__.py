"""Fixes: text edits that rewrite a training loop to the canonical update skeleton.

Rules decide what to change and call :mod:`gradlint.fixes.primitives`; :mod:`gradlint.fixer`
applies the resulting fixes to a file.
"""
