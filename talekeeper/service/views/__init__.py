"""Typed views: the shape of every JSON body the services hand to the web (and the pages).

Routes declare these as their `response_model`, so `/openapi.json` documents every body
with its fields. Services still build plain dicts; FastAPI validates each into its view on
the way out. A view forbids keys it does not declare, so a key a service adds without
adding it here fails the route (500) and the tests that call it — the schema can never
silently fall behind the body. A view writes back only the keys it was given, so a field
a service leaves out is absent from the body too (not `null`).

    base       View, the rule above
    accounts   players, the one signed in, invitations (accounts on)
    story      adventures, turns, takes, lines, Save Points, search, a turn's result
    state      the state panel, corrections, the audit trail, the canon log, creation
    context    Insights, plot components, story cards, memories
    settings   settings, health, the connection check, sampler presets
    scenarios  scenarios, their files, imports of other apps' files, bundles
"""
