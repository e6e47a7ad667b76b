"""The flow of `examples/hello.c` in Python: open an engine, create an API key, start a session,
give both consents, close. Run after `pip install ./bindings/python`:

    python3 bindings/python/examples/hello.py
"""

from vouch import Engine

# 1. Open an engine. ":memory:" keeps everything in RAM; a real app passes a file path and keeps the
#    keys (base64 of 32 random bytes) in the platform's keychain.
OPTIONS = {
    "database": ":memory:",
    "template_key": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
    "api_keys": {"hs256_secret": "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="},
}

with Engine(OPTIONS) as engine:  # 5. leaving the block closes the engine and its database
    # 2. Create an API key for a project; the token is shown only this once.
    key = engine.create_api_key("demo", ["Face Recognition"])
    # 3. Every request carries the key as "Authorization: Bearer <token>".
    headers = {"Authorization": f"Bearer {key['token']}"}
    for path, body in [
        ("/api-gateway/sessions/start", None),
        # 4. The user gives authorization consent and storage consent (needed before enrolment).
        ("/api-consent/consent", {"is_consent_given": True, "user_fullname": "alice"}),
        ("/api-consent/strg-consent", {"is_consent_given": True, "user_fullname": "alice"}),
    ]:
        response = engine.request("POST", path, headers=headers, json_body=body)
        print(f"POST {path} -> {response.status} {response.body}")
