"""Tests of the Python binding against the real shared library.

Run from the repository root after `cargo build --release -p vouch-ffi`:

    python3 -m unittest discover -s bindings/python/tests -v

With `VOUCH_TEST_INSTALLED=1` the suite tests the installed package (`pip install
bindings/python`, the library inside the wheel) instead of the source tree; `scripts/test` does
that in a fresh virtual environment.
"""

from __future__ import annotations

import base64
import os
import sys
import tempfile
import threading
import tomllib
import unittest
from pathlib import Path
from typing import Any

PYTHON_DIR = Path(__file__).resolve().parent.parent
REPO_ROOT = PYTHON_DIR.parent.parent
INSTALLED = os.environ.get("VOUCH_TEST_INSTALLED") == "1"
if not INSTALLED:
    sys.path.insert(0, str(PYTHON_DIR))

import vouch  # noqa: E402
from vouch import Engine, Part, Response, Status, VouchError  # noqa: E402

PROJECT = "proj_test"
SERVICES = ["Face Recognition", "Voice Recognition"]
MP4_HEAD = b"\x00\x00\x00\x18ftypmp42\x00\x00\x00\x00mp42isom" + bytes(64)
CONSENT_ALICE = {"is_consent_given": True, "user_fullname": "alice"}
DEFAULT_RULES = {
    "schema": 1,
    "id": "default",
    "version": 1,
    "min_score": 60,
    "not_enrolled": "fail",
    "removed_for_consent": "skip",
    "unavailable": "fail",
    "services": {
        "Face Recognition": {"required": True, "weight": 0.35, "pass_at": 0.5},
        "Voice Recognition": {"required": True, "weight": 0.25, "pass_at": 0.5},
        "Face Liveness Detection": {"required": True, "weight": 0.2, "pass_at": 0.5},
        "Active Speaker Detection": {"required": True, "weight": 0.1, "pass_at": 0.5},
        "Visual Speech Recognition": {"required": False, "weight": 0.1, "pass_at": 0.5},
    },
}


def random_key() -> str:
    return base64.b64encode(os.urandom(32)).decode("ascii")


class EngineTestCase(unittest.TestCase):
    def setUp(self) -> None:
        self.tmp = tempfile.TemporaryDirectory()
        self.addCleanup(self.tmp.cleanup)
        self.options: dict[str, Any] = {
            "database": str(Path(self.tmp.name) / "vouch.sqlite"),
            "template_key": random_key(),
            "api_keys": {"hs256_secret": random_key()},
        }
        self.engine = Engine(self.options)
        self.addCleanup(self.engine.close)
        self.key = self.engine.create_api_key(PROJECT, SERVICES, label="tests")
        self.auth = {"Authorization": f"Bearer {self.key['token']}"}

    def start_session(self) -> str:
        response = self.engine.request("POST", "/api-gateway/sessions/start", headers=self.auth)
        self.assertEqual(response.status, 200, response.body)
        session_id: str = response.body["data"]
        return session_id

    def give_consents(self, engine: Engine, fullname: str = "alice") -> None:
        body = {"is_consent_given": True, "user_fullname": fullname}
        for path in ("/api-consent/consent", "/api-consent/strg-consent"):
            response = engine.request("POST", path, headers=self.auth, json_body=body)
            self.assertEqual(response.status, 200, response.body)


class KeyTests(EngineTestCase):
    def test_create_api_key_returns_the_token_once(self) -> None:
        self.assertTrue(self.key["id"].startswith("key_"), self.key)
        self.assertEqual(self.key["project_id"], PROJECT)
        self.assertEqual(self.key["selected_services"], SERVICES)
        self.assertIsNone(self.key["scores_id"])
        self.assertEqual(self.key["label"], "tests")
        self.assertEqual(self.key["token"].count("."), 2)
        listed = self.engine.list_api_keys(PROJECT)
        self.assertEqual([k["id"] for k in listed], [self.key["id"]])
        self.assertEqual(listed[0]["status"], "active")
        self.assertNotIn("token", listed[0])
        self.assertEqual(self.engine.list_api_keys("other_project"), [])

    def test_unknown_service_is_invalid_argument(self) -> None:
        with self.assertRaises(VouchError) as caught:
            self.engine.create_api_key(PROJECT, ["Palm Reading"])
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertIn('unknown service "Palm Reading"', caught.exception.message)

    def test_revoked_key_is_not_active(self) -> None:
        self.engine.revoke_api_key(PROJECT, self.key["id"])
        self.engine.revoke_api_key(PROJECT, self.key["id"])  # idempotent
        response = self.engine.request("POST", "/api-gateway/sessions/start", headers=self.auth)
        self.assertEqual(response.status, 500)
        self.assertEqual(response.body, {"error": "api key is not active"})
        self.assertEqual(self.engine.list_api_keys(PROJECT)[0]["status"], "revoked")

    def test_revoking_an_unknown_key_is_not_found(self) -> None:
        with self.assertRaises(VouchError) as caught:
            self.engine.revoke_api_key(PROJECT, "key_does_not_exist")
        self.assertEqual(caught.exception.status, Status.NOT_FOUND)
        self.assertTrue(caught.exception.message)

    def test_scoring_rules(self) -> None:
        self.engine.set_scoring_rules(PROJECT, DEFAULT_RULES)
        self.engine.set_scoring_rules(PROJECT, DEFAULT_RULES, scores_id="custom_1")
        bad = dict(DEFAULT_RULES, min_score_typo=1)
        with self.assertRaises(VouchError) as caught:
            self.engine.set_scoring_rules(PROJECT, bad)
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)
        self.assertIn("min_score_typo", caught.exception.message)


    def test_attempts_are_read_and_reset(self) -> None:
        fresh = self.engine.attempts(PROJECT, "alice")
        self.assertEqual(fresh["failures"], 0)
        self.assertEqual(fresh["limit"], 10)
        self.assertEqual(fresh["events"], [])
        reset = self.engine.reset_attempts(PROJECT, "alice")
        self.assertEqual([event["event"] for event in reset["events"]], ["reset"])
        with self.assertRaises(VouchError) as caught:
            self.engine.attempts(PROJECT, "")
        self.assertEqual(caught.exception.status, Status.INVALID_ARGUMENT)


class RequestTests(EngineTestCase):
    def test_session_start(self) -> None:
        response = self.engine.request("POST", "/api-gateway/sessions/start", headers=self.auth)
        self.assertIsInstance(response, Response)
        self.assertEqual(response.status, 200)
        self.assertTrue(response.body["data"].startswith("sess_"), response.body)
        self.assertEqual(response.body["message"], "session started")
        self.assertIn("X-Request-Id", response.headers)
        self.assertTrue(response.headers["X-Request-Id"].startswith("req_"))
        self.assertEqual(response.header("content-type"), "application/json")

    def test_missing_token_is_401(self) -> None:
        response = self.engine.request("POST", "/api-gateway/sessions/start")
        self.assertEqual(response.status, 401)
        self.assertEqual(response.body, {"error": "missing authorization token"})
        self.assertIn("X-Request-Id", response.headers)

    def test_consents_and_status(self) -> None:
        response = self.engine.request(
            "POST", "/api-consent/consent", headers=self.auth, json_body=CONSENT_ALICE
        )
        self.assertEqual(response.status, 200, response.body)
        self.assertEqual(response.body["message"], "authorization consent given")
        self.assertEqual(response.body["data"]["consent_type"], "authorization")
        self.assertIs(response.body["data"]["is_consent_given"], True)
        response = self.engine.request(
            "POST", "/api-consent/strg-consent", headers=self.auth, json_body=CONSENT_ALICE
        )
        self.assertEqual(response.status, 200, response.body)
        self.assertEqual(response.body["message"], "storage consent given")

        response = self.engine.request(
            "GET", "/api-consent/status?user_fullname=alice", headers=self.auth
        )
        self.assertEqual(response.status, 200, response.body)
        data = response.body["data"]
        self.assertEqual(data["user_fullname"], "alice")
        self.assertIs(data["authorization"]["is_consent_given"], True)
        self.assertIs(data["storage"]["is_consent_given"], True)
        self.assertIsNotNone(data["authorization"]["given_at"])
        self.assertIsNone(data["storage"]["withdrawn_at"])

        response = self.engine.request(
            "GET", "/api-consent/status?user_fullname=bob", headers=self.auth
        )
        self.assertEqual(response.status, 200, response.body)
        self.assertIs(response.body["data"]["authorization"]["is_consent_given"], False)

    def test_session_is_locked_to_its_first_fullname(self) -> None:
        session_id = self.start_session()
        response = self.engine.request(
            "POST",
            "/api-consent/consent",
            headers={**self.auth, "X-Session-ID": session_id},
            json_body=CONSENT_ALICE,
        )
        self.assertEqual(response.status, 200, response.body)
        response = self.engine.request(
            "POST",
            "/api-consent/consent",
            headers={**self.auth, "X-Session-ID": session_id},
            json_body={"is_consent_given": True, "user_fullname": "bob"},
        )
        self.assertEqual(response.status, 403)
        self.assertEqual(response.body, {"error": "session belongs to another user"})
        response = self.engine.request(
            "POST",
            "/api-gateway/process-video",
            headers={**self.auth, "X-Session-ID": session_id, "X-User-Fullname": "bob"},
            parts=[Part("video", MP4_HEAD, "clip.mp4", "video/mp4"), Part("phrase", "hello")],
        )
        self.assertEqual(response.status, 403)
        self.assertEqual(response.body, {"error": "session belongs to another user"})

    def test_process_video_is_validated_then_needs_models(self) -> None:
        headers = {**self.auth, "X-User-Fullname": "alice"}
        response = self.engine.request(
            "POST",
            "/api-gateway/process-video",
            headers=headers,
            parts=[
                Part("video", MP4_HEAD, filename="clip.mp4", content_type="video/mp4"),
                Part("phrase", "my voice is my password"),
            ],
        )
        # This engine was opened without models.
        self.assertEqual(response.status, 500, response.body)
        self.assertEqual(
            response.body,
            {"error": "face recognition needs models: open the engine with models_dir"},
        )
        # The same request with a video that is not one is rejected by the request rules.
        response = self.engine.request(
            "POST",
            "/api-gateway/process-video",
            headers=headers,
            parts=[Part("video", b"GIF89a" + bytes(32)), Part("phrase", "hello")],
        )
        self.assertEqual(response.status, 400)
        self.assertIn("invalid file format: video", response.body["error"])
        response = self.engine.request(
            "POST", "/api-gateway/process-video", headers=headers, parts=[Part("phrase", "hi")]
        )
        self.assertEqual(response.status, 400)
        self.assertEqual(response.body, {"error": "video is required"})

    def test_unknown_path_and_method(self) -> None:
        self.assertEqual(self.engine.request("POST", "/api-gateway/nope", headers=self.auth).status, 404)
        response = self.engine.request("GET", "/api-gateway/process-video", headers=self.auth)
        self.assertEqual(response.status, 405)

    def test_header_values_must_be_strings(self) -> None:
        with self.assertRaises(VouchError) as caught:
            self.engine.request("POST", "/api-gateway/sessions/start", headers={"X-Count": 3})  # type: ignore[dict-item]
        self.assertEqual(caught.exception.status, Status.INVALID_JSON)
        self.assertEqual(caught.exception.message, 'header "X-Count" must have a string value')

    def test_engine_is_shareable_across_threads(self) -> None:
        results: list[int] = []
        errors: list[BaseException] = []
        lock = threading.Lock()

        def work() -> None:
            try:
                for _ in range(5):
                    r = self.engine.request("POST", "/api-gateway/sessions/start", headers=self.auth)
                    with lock:
                        results.append(r.status)
            except BaseException as error:  # pragma: no cover - reported below
                errors.append(error)

        threads = [threading.Thread(target=work) for _ in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        self.assertEqual(errors, [])
        self.assertEqual(results, [200] * 40)


class LifetimeTests(EngineTestCase):
    def test_reopen_keeps_consent(self) -> None:
        self.give_consents(self.engine)
        self.engine.close()
        self.assertTrue(self.engine.closed)
        with Engine(self.options) as reopened:
            response = reopened.request(
                "GET", "/api-consent/status?user_fullname=alice", headers=self.auth
            )
            self.assertEqual(response.status, 200, response.body)
            self.assertIs(response.body["data"]["authorization"]["is_consent_given"], True)
            self.assertIs(response.body["data"]["storage"]["is_consent_given"], True)
            self.assertEqual(reopened.list_api_keys(PROJECT)[0]["id"], self.key["id"])
        self.assertTrue(reopened.closed)

    def test_closed_engine_refuses_calls(self) -> None:
        self.engine.close()
        self.engine.close()  # idempotent
        with self.assertRaises(ValueError):
            self.engine.request("POST", "/api-gateway/sessions/start", headers=self.auth)
        with self.assertRaises(ValueError):
            self.engine.list_api_keys(PROJECT)


class OptionTests(unittest.TestCase):
    def assert_rejected(self, options: dict[str, Any] | str, expected: str) -> None:
        with self.assertRaises(VouchError) as caught:
            Engine(options)
        self.assertEqual(caught.exception.status, 4)
        self.assertEqual(caught.exception.status, Status.INVALID_OPTIONS)
        self.assertIn(expected, caught.exception.message)

    def test_bad_options_name_the_field(self) -> None:
        self.assert_rejected(
            {"database": ":memory:", "template_key": "AAAA"},
            "template_key must decode to 32 bytes, got 3",
        )
        self.assert_rejected(
            {"database": ":memory:", "template_key": random_key(), "treads": 2},
            "unknown field `treads`",
        )
        self.assert_rejected(
            {
                "database": ":memory:",
                "template_key": random_key(),
                "api_keys": {"hs256_secret": "AAAA"},
            },
            "api_keys.hs256_secret must decode to at least 32 bytes, got 3",
        )
        self.assert_rejected('{"template_key": "x"}', "missing field `database`")

    def test_memory_engine_without_secret_cannot_create_keys(self) -> None:
        with Engine({"database": ":memory:", "template_key": random_key()}) as engine:
            with self.assertRaises(VouchError) as caught:
                engine.create_api_key(PROJECT, SERVICES)
            self.assertNotEqual(caught.exception.status, Status.OK)
            self.assertIn("hs256_secret", caught.exception.message)


class VersionTests(unittest.TestCase):
    def test_version_matches_cargo_toml(self) -> None:
        with open(REPO_ROOT / "Cargo.toml", "rb") as manifest:
            expected = tomllib.load(manifest)["workspace"]["package"]["version"]
        self.assertEqual(vouch.version(), expected)
        self.assertRegex(vouch.version(), r"^\d+\.\d+\.\d+$")

    def test_library_path_argument_and_missing_library(self) -> None:
        path = vouch.find_library()
        self.assertEqual(vouch.version(path), vouch.version())
        with self.assertRaises(FileNotFoundError):
            Engine({"database": ":memory:", "template_key": random_key()}, "/nonexistent/libvouch.so")


class PackageTests(unittest.TestCase):
    def test_the_package_matches_its_metadata_and_is_typed(self) -> None:
        with open(PYTHON_DIR / "pyproject.toml", "rb") as project:
            metadata = tomllib.load(project)["project"]
        self.assertEqual(metadata["version"], vouch.version())
        self.assertTrue((Path(vouch.__file__).parent / "py.typed").is_file())

    @unittest.skipUnless(INSTALLED, "tests the installed package (VOUCH_TEST_INSTALLED=1)")
    def test_the_installed_package_carries_and_loads_its_own_library(self) -> None:
        package = Path(vouch.__file__).resolve().parent
        self.assertNotEqual(package, (PYTHON_DIR / "vouch").resolve(), "imported the source tree")
        self.assertNotIn("VOUCH_LIBRARY", os.environ)
        self.assertEqual(vouch.find_library().parent, package)
        with Engine({"database": ":memory:", "template_key": random_key()}) as engine:
            self.assertFalse(engine.closed)


if __name__ == "__main__":
    unittest.main()
