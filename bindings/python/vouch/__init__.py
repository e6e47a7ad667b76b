"""Python binding of Vouch, the offline on-device biometric verification engine.

A thin :mod:`ctypes` wrapper over the C ABI in ``include/vouch.h`` (standard library only)::

    from vouch import Engine, Part

    with Engine({"database": "vouch.sqlite", "template_key": "<base64 of 32 bytes>",
                 "api_keys": {"hs256_secret": "<base64, >= 32 bytes>"}}) as engine:
        key = engine.create_api_key("p1", ["Face Recognition"])
        response = engine.request("POST", "/api-gateway/sessions/start",
                                  headers={"Authorization": f"Bearer {key['token']}"})
        print(response.status, response.body["data"])

The shared library is found through, in order: the ``library_path`` argument, the environment
variable ``VOUCH_LIBRARY``, the copy an installed package (``pip install bindings/python``) carries
beside this file, or ``../../target/release/libvouch.so`` relative to the directory that holds
this package (the repository's ``bindings/python``), i.e. the output of
``cargo build --release -p vouch-ffi``.

Errors: a call the library refuses raises :class:`VouchError` with the library's status
(see :class:`Status`) and the message of ``vouch_last_error_message``. HTTP-level failures of
:meth:`Engine.request` (400, 401, 403, 501, ...) are *not* exceptions: they are ordinary
:class:`Response` objects, exactly as the cloud service would answer.

Thread safety: one :class:`Engine` may be shared by any number of threads; the library runs
concurrent calls on one engine safely and ctypes releases the GIL during each call. The library's
last-error message is per thread, and this binding reads it on the calling thread right after the
failing call. :meth:`Engine.close` waits for calls still running on other threads before it frees
the engine; calls made after ``close()`` raise :class:`ValueError`.
"""

from __future__ import annotations

import ctypes
import enum
import json
import os
import sys
import threading
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = [
    "Engine",
    "Part",
    "Response",
    "Status",
    "VouchError",
    "find_library",
    "version",
]


class Status(enum.IntEnum):
    """``vouch_status``: the result of every fallible C call."""

    OK = 0
    NULL_ARGUMENT = 1
    INVALID_UTF8 = 2
    INVALID_JSON = 3
    INVALID_OPTIONS = 4
    INVALID_ARGUMENT = 5
    NOT_FOUND = 6
    CONFLICT = 7
    AUTH_FAILED = 8
    FORBIDDEN = 9
    CONSENT_REQUIRED = 10
    TEMPLATE_UNREADABLE = 11
    STORAGE = 12
    PANIC = 100


class VouchError(Exception):
    """A library call failed: ``status`` is the ``vouch_status`` value, ``message`` says why."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(status, message)
        self.status = status
        self.message = message

    def __str__(self) -> str:
        try:
            name = Status(self.status).name
        except ValueError:
            name = "UNKNOWN"
        return f"[{name} ({self.status})] {self.message}"


@dataclass(frozen=True)
class Part:
    """One multipart/form-data part; ``str`` data is sent as UTF-8."""

    name: str
    data: bytes | str
    filename: str | None = None
    content_type: str | None = None


@dataclass
class Response:
    """A response as the cloud service would send it: HTTP status, headers, JSON body."""

    status: int
    headers: dict[str, str] = field(default_factory=dict)
    body: dict[str, Any] = field(default_factory=dict)

    def header(self, name: str) -> str | None:
        """The value of a header, name compared case-insensitively, or ``None``."""
        wanted = name.lower()
        return next((v for k, v in self.headers.items() if k.lower() == wanted), None)


# --- the C library -------------------------------------------------------------------------------


class _Part(ctypes.Structure):
    _fields_ = [
        ("name", ctypes.c_char_p),
        ("filename", ctypes.c_char_p),
        ("content_type", ctypes.c_char_p),
        ("data", ctypes.POINTER(ctypes.c_uint8)),
        ("len", ctypes.c_size_t),
    ]


_c_status = ctypes.c_uint32
_c_str = ctypes.c_char_p  # const char * in (bytes or None) / static or borrowed const char * out
_c_ptr = ctypes.c_void_p  # opaque vouch_engine * / vouch_response *; owned char * outputs
_c_ptr_out = ctypes.POINTER(ctypes.c_void_p)

_PROTOTYPES: dict[str, tuple[Any, list[Any]]] = {
    "vouch_engine_new": (_c_status, [_c_str, _c_ptr_out]),
    "vouch_engine_free": (None, [_c_ptr]),
    "vouch_api_key_create": (_c_status, [_c_ptr, _c_str, _c_ptr_out]),
    "vouch_api_key_list": (_c_status, [_c_ptr, _c_str, _c_ptr_out]),
    "vouch_api_key_revoke": (_c_status, [_c_ptr, _c_str, _c_str]),
    "vouch_scoring_rules_set": (_c_status, [_c_ptr, _c_str, _c_str, _c_str]),
    "vouch_attempts_get": (_c_status, [_c_ptr, _c_str, _c_str, _c_ptr_out]),
    "vouch_attempts_reset": (_c_status, [_c_ptr, _c_str, _c_str, _c_ptr_out]),
    "vouch_request": (
        _c_status,
        [
            _c_ptr,  # engine
            _c_str,  # method
            _c_str,  # path
            _c_str,  # headers_json
            ctypes.POINTER(_Part),  # parts
            ctypes.c_size_t,  # n_parts
            ctypes.POINTER(ctypes.c_uint8),  # body
            ctypes.c_size_t,  # body_len
            _c_ptr_out,  # out_response
        ],
    ),
    "vouch_response_status": (ctypes.c_uint16, [_c_ptr]),
    "vouch_response_headers_json": (_c_str, [_c_ptr]),
    "vouch_response_header": (_c_str, [_c_ptr, _c_str]),
    "vouch_response_body_json": (_c_str, [_c_ptr]),
    "vouch_response_free": (None, [_c_ptr]),
    "vouch_last_error_message": (_c_str, []),
    "vouch_status_text": (_c_str, [ctypes.c_uint32]),
    "vouch_string_free": (None, [_c_ptr]),
    "vouch_version": (_c_str, []),
}

_LIBRARY_NAME = {"darwin": "libvouch.dylib", "win32": "vouch.dll"}.get(sys.platform, "libvouch.so")
_libraries: dict[str, ctypes.CDLL] = {}
_libraries_lock = threading.Lock()


def find_library(library_path: str | os.PathLike[str] | None = None) -> Path:
    """The path of the shared library: ``library_path``, ``$VOUCH_LIBRARY``, the copy an
    installed package carries beside this file, or the repository's ``target/release``
    (``../../target/release`` relative to ``bindings/python``)."""
    if library_path is not None:
        return Path(library_path)
    from_env = os.environ.get("VOUCH_LIBRARY")
    if from_env:
        return Path(from_env)
    package = Path(__file__).resolve().parent
    bundled = package / _LIBRARY_NAME
    if bundled.is_file():
        return bundled
    return package.parent / ".." / ".." / "target" / "release" / _LIBRARY_NAME


def _load(library_path: str | os.PathLike[str] | None = None) -> ctypes.CDLL:
    path = find_library(library_path).resolve()
    key = str(path)
    with _libraries_lock:
        library = _libraries.get(key)
        if library is None:
            if not path.is_file():
                raise FileNotFoundError(
                    f"vouch library not found at {path}; build it with "
                    "`cargo build --release -p vouch-ffi` or set VOUCH_LIBRARY"
                )
            library = ctypes.CDLL(key)
            for name, (restype, argtypes) in _PROTOTYPES.items():
                function = getattr(library, name)
                function.restype = restype
                function.argtypes = argtypes
            _libraries[key] = library
        return library


def _encode(text: str | None) -> bytes | None:
    return None if text is None else text.encode("utf-8")


def _check(library: ctypes.CDLL, status: int) -> None:
    """Raises for a non-OK status; must run on the calling thread right after the failing call."""
    if status != Status.OK:
        raw = library.vouch_last_error_message()
        message = raw.decode("utf-8", "replace") if raw else ""
        if not message:
            text = library.vouch_status_text(status)
            message = text.decode("utf-8", "replace") if text else "unknown status"
        raise VouchError(int(status), message)


def _take_string(library: ctypes.CDLL, pointer: ctypes.c_void_p) -> str:
    """Copies a library-owned ``char *`` and frees it with ``vouch_string_free``."""
    try:
        return ctypes.string_at(pointer.value).decode("utf-8") if pointer.value else ""
    finally:
        library.vouch_string_free(pointer)


def version(library_path: str | os.PathLike[str] | None = None) -> str:
    """The library's version, ``MAJOR.MINOR.PATCH``."""
    raw: bytes = _load(library_path).vouch_version()
    return raw.decode("utf-8")


# --- the engine ----------------------------------------------------------------------------------


class Engine:
    """An open Vouch engine: the database, the keys, the worker pool.

    ``options`` are the engine options (``database``, ``template_key``, ``api_keys``, ``threads``,
    ``models_dir``) as a dict or as JSON text. Use it as a context manager or call :meth:`close`.

    Thread safety: an engine may be shared across threads; every method may be called
    concurrently. :meth:`close` waits for calls in flight, then frees the engine once.
    """

    _handle: ctypes.c_void_p | None = None  # set early so __del__ works on a failed __init__

    def __init__(
        self,
        options: Mapping[str, Any] | str,
        library_path: str | os.PathLike[str] | None = None,
    ) -> None:
        self._lib = _load(library_path)
        self._state = threading.Condition()
        self._in_flight = 0
        text = options if isinstance(options, str) else json.dumps(options)
        handle = ctypes.c_void_p()
        _check(self._lib, self._lib.vouch_engine_new(text.encode("utf-8"), ctypes.byref(handle)))
        self._handle = handle

    # lifetime

    def close(self) -> None:
        """Closes the engine (waits for calls still running on other threads). Idempotent."""
        state = getattr(self, "_state", None)
        if state is None:
            return
        with state:
            handle, self._handle = self._handle, None
            while self._in_flight:
                state.wait()
        if handle is not None:
            self._lib.vouch_engine_free(handle)

    @property
    def closed(self) -> bool:
        return self._handle is None

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            self.close()
        except Exception:  # never raise from a finalizer (e.g. at interpreter shutdown)
            pass

    @contextmanager
    def _engine(self) -> Iterator[ctypes.c_void_p]:
        with self._state:
            if self._handle is None:
                raise ValueError("operation on a closed vouch Engine")
            handle = self._handle
            self._in_flight += 1
        try:
            yield handle
        finally:
            with self._state:
                self._in_flight -= 1
                if not self._in_flight:
                    self._state.notify_all()

    # requests

    def request(
        self,
        method: str,
        path: str,
        headers: Mapping[str, str] | None = None,
        parts: Sequence[Part] | None = None,
        json_body: Mapping[str, Any] | None = None,
    ) -> Response:
        """Runs one request of the verification spec, e.g. ``("POST", "/api-gateway/sessions/start")``.

        HTTP error responses are returned, not raised; :class:`VouchError` means the arguments
        themselves were unusable (e.g. a header value that is not a string).
        """
        lib = self._lib
        keep: list[object] = []  # buffers the C side points into during the call
        c_parts = (_Part * len(parts or ()))()
        for index, part in enumerate(parts or ()):
            data = part.data.encode("utf-8") if isinstance(part.data, str) else bytes(part.data)
            texts = (_encode(part.name), _encode(part.filename), _encode(part.content_type))
            keep.extend((data, *texts))
            c_parts[index] = _Part(
                *texts,
                ctypes.cast(ctypes.c_char_p(data), ctypes.POINTER(ctypes.c_uint8)),
                len(data),
            )
        body = None if json_body is None else json.dumps(json_body).encode("utf-8")
        body_pointer = None
        if body is not None:
            keep.append(body)
            body_pointer = ctypes.cast(ctypes.c_char_p(body), ctypes.POINTER(ctypes.c_uint8))
        headers_json = None if headers is None else json.dumps(dict(headers)).encode("utf-8")
        response = ctypes.c_void_p()
        with self._engine() as handle:
            status = lib.vouch_request(
                handle,
                method.encode("utf-8"),
                path.encode("utf-8"),
                headers_json,
                c_parts if len(c_parts) else None,
                len(c_parts),
                body_pointer,
                len(body) if body is not None else 0,
                ctypes.byref(response),
            )
            _check(lib, status)
        try:
            headers_text = lib.vouch_response_headers_json(response)
            body_text = lib.vouch_response_body_json(response)
            return Response(
                status=int(lib.vouch_response_status(response)),
                headers=json.loads(headers_text) if headers_text else {},
                body=json.loads(body_text) if body_text else {},
            )
        finally:
            lib.vouch_response_free(response)

    # API keys and scoring rules

    def create_api_key(
        self,
        project_id: str,
        selected_services: Sequence[str],
        scores_id: str | None = None,
        label: str | None = None,
    ) -> dict[str, Any]:
        """Creates an HS256 key (needs ``api_keys.hs256_secret``). The ``token`` is shown only here."""
        request = json.dumps(
            {
                "project_id": project_id,
                "selected_services": list(selected_services),
                "scores_id": scores_id,
                "label": label,
            }
        )
        out = ctypes.c_void_p()
        with self._engine() as handle:
            _check(
                self._lib,
                self._lib.vouch_api_key_create(handle, request.encode("utf-8"), ctypes.byref(out)),
            )
        result: dict[str, Any] = json.loads(_take_string(self._lib, out))
        return result

    def list_api_keys(self, project_id: str) -> list[dict[str, Any]]:
        """A project's keys (no tokens), each with ``status`` ``active`` or ``revoked``."""
        out = ctypes.c_void_p()
        with self._engine() as handle:
            _check(
                self._lib,
                self._lib.vouch_api_key_list(handle, project_id.encode("utf-8"), ctypes.byref(out)),
            )
        result: list[dict[str, Any]] = json.loads(_take_string(self._lib, out))
        return result

    def revoke_api_key(self, project_id: str, key_id: str) -> None:
        """Revokes a key; revoking a revoked key succeeds, an unknown key is ``NOT_FOUND``."""
        with self._engine() as handle:
            _check(
                self._lib,
                self._lib.vouch_api_key_revoke(
                    handle, project_id.encode("utf-8"), key_id.encode("utf-8")
                ),
            )

    def attempts(self, project_id: str, user_fullname: str) -> dict[str, Any]:
        """Where a user stands against the attempt limit: ``failures``, ``limit``,
        ``held_until``, ``retry_after_s``, ``disabled`` and the latest ``events``."""
        return self._attempts("vouch_attempts_get", project_id, user_fullname)

    def reset_attempts(self, project_id: str, user_fullname: str) -> dict[str, Any]:
        """Clears a user's failed attempts, wait and disabling (after another factor was
        checked); the reset is an audit row. Returns where the user stands afterwards."""
        return self._attempts("vouch_attempts_reset", project_id, user_fullname)

    def _attempts(self, function: str, project_id: str, user_fullname: str) -> dict[str, Any]:
        out = ctypes.c_void_p()
        with self._engine() as handle:
            _check(
                self._lib,
                getattr(self._lib, function)(
                    handle,
                    project_id.encode("utf-8"),
                    user_fullname.encode("utf-8"),
                    ctypes.byref(out),
                ),
            )
        result: dict[str, Any] = json.loads(_take_string(self._lib, out))
        return result

    def set_scoring_rules(
        self,
        project_id: str,
        rules: Mapping[str, Any] | str,
        scores_id: str | None = None,
    ) -> None:
        """Stores a project's rule set, or with ``scores_id`` the custom set keys with it use."""
        text = rules if isinstance(rules, str) else json.dumps(rules)
        with self._engine() as handle:
            _check(
                self._lib,
                self._lib.vouch_scoring_rules_set(
                    handle, project_id.encode("utf-8"), _encode(scores_id), text.encode("utf-8")
                ),
            )
