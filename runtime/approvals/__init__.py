"""Approvals: what a human is asked and what their answer binds (DESIGN.md, "Humans in the
loop: one approval model").

Today: `binding`, the digest that ties an approval of a tool call to exactly the call a
human was shown. Pure, so workflows, activities and routes use it alike.
"""
