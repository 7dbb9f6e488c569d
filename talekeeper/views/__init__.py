"""Typed views: one shape per answer, from service to screen.

A service builds the view (docs/architecture.md "One shape per answer"); the pages and the
terminal render it as it comes, and the JSON routes declare it as their `response_model`,
so `/openapi.json` documents exactly what every front reads. A view forbids keys it does
not declare, and writes every key it declares (null when empty), so a client can rely on
a key being there; only a settings document as stored (`Sparse`) keeps to the fields
that are set.

    base       View and Sparse, the rules above
    accounts   players, the one signed in, invitations (accounts on)
    story      adventures, turns, takes, lines, Save Points, search, a turn's result
    state      the state panel, corrections, the audit trail, the canon log, creation
    context    Insights, plot components, story cards, memories
    settings   settings, health, the connection check, sampler presets, connections
    scenarios  scenarios, their files, imports of other apps' files, bundles
"""
