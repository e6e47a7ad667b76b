// An open engine; mirrors bindings/kotlin/src/main/kotlin/io/vouch/Engine.kt. Thread-safe, as the
// header says of vouch_engine: calls hold a read lock, close() the write lock, so it waits for
// running calls and frees once. deinit closes an engine the app forgot (ARC: no call can be running
// then, since each holds a reference).
import Foundation
import VouchFFI

public final class Engine: @unchecked Sendable {
    private var pointer: OpaquePointer?
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init(_ pointer: OpaquePointer) {
        self.pointer = pointer
        lock = .allocate(capacity: 1)
        lock.initialize(to: pthread_rwlock_t())
        pthread_rwlock_init(lock, nil)
    }

    deinit {
        close()
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    /// True after ``close()``.
    public var isClosed: Bool {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return pointer == nil
    }

    /// Frees the engine after the calls still running on it; idempotent.
    public func close() {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard let engine = pointer else { return }
        pointer = nil
        vouch_engine_free(engine)
        Freed.count.add()
    }

    private func withEngine<T>(_ body: (OpaquePointer) throws -> T) throws -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        guard let engine = pointer else { throw EngineClosedError() }
        return try body(engine)
    }

    /// Runs one operation of the verification or job-scheduler API, e.g.
    /// `request("POST", "/api-gateway/sessions/start", headers: ["Authorization": "Bearer \(token)"])`.
    /// HTTP errors are ordinary responses; ``VouchError`` means the arguments were unusable.
    public func request(
        _ method: String,
        _ path: String,
        headers: [String: String] = [:],
        body: Data? = nil,
        parts: [Part] = []
    ) throws -> Response {
        try refuseNUL(method, "method")
        try refuseNUL(path, "path")
        for part in parts {
            try refuseNUL(part.name, "part name")
            try refuseNUL(part.filename ?? "", "part filename")
            try refuseNUL(part.contentType ?? "", "part content type")
        }
        let headersJSON: String? = headers.isEmpty
            ? nil
            : String(decoding: try JSONSerialization.data(withJSONObject: headers), as: UTF8.self)
        return try withEngine { engine in
            // The parts' strings and bytes in C memory for the duration of the call.
            var owned: [UnsafeMutableRawPointer] = []
            defer { owned.forEach { free($0) } }
            func cString(_ s: String?) -> UnsafePointer<CChar>? {
                guard let s, let copy = strdup(s) else { return nil }
                owned.append(UnsafeMutableRawPointer(copy))
                return UnsafePointer(copy)
            }
            func bytes(_ d: Data) -> UnsafePointer<UInt8>? {
                guard !d.isEmpty, let copy = malloc(d.count) else { return nil }
                owned.append(copy)
                d.copyBytes(to: copy.assumingMemoryBound(to: UInt8.self), count: d.count)
                return UnsafePointer(copy.assumingMemoryBound(to: UInt8.self))
            }
            let cParts = parts.map {
                vouch_part(name: cString($0.name), filename: cString($0.filename),
                           content_type: cString($0.contentType), data: bytes($0.data), len: $0.data.count)
            }
            var response: OpaquePointer?
            let status = cParts.withUnsafeBufferPointer { partsBuffer in
                (body ?? Data()).withUnsafeBytes { raw in
                    vouch_request(engine, method, path, headersJSON,
                                  partsBuffer.isEmpty ? nil : partsBuffer.baseAddress, partsBuffer.count,
                                  body == nil ? nil : raw.bindMemory(to: UInt8.self).baseAddress, raw.count,
                                  &response)
                }
            }
            guard status == 0, let response else { throw VouchError.last(status) }
            defer { vouch_response_free(response) }
            let headers = String(cString: vouch_response_headers_json(response))
            let map = (try? JSONSerialization.jsonObject(with: Data(headers.utf8))) as? [String: String]
            return Response(status: Int(vouch_response_status(response)),
                            body: String(cString: vouch_response_body_json(response)),
                            headers: map ?? [:])
        }
    }

    /// ``request(_:_:headers:body:parts:)`` with a JSON body given as a string.
    public func request(_ method: String, _ path: String, headers: [String: String], json: String) throws -> Response {
        try request(method, path, headers: headers, body: Data(json.utf8))
    }

    /// Creates an HS256 API key (the engine needs `api_keys.hs256_secret`); the answer's JSON
    /// carries the token, shown only here.
    public func createApiKey(_ requestJSON: String) throws -> String {
        try refuseNUL(requestJSON, "request")
        return try withEngine { engine in
            var out: UnsafeMutablePointer<CChar>?
            let status = vouch_api_key_create(engine, requestJSON, &out)
            guard status == 0, let out else { throw VouchError.last(status) }
            defer { vouch_string_free(out) }
            return String(cString: out)
        }
    }

    /// The template of the largest face in a JPEG or PNG file (read in place, not copied).
    public func faceTemplate(_ image: Data) throws -> Template {
        try template(image, size: Int(VOUCH_FACE_TEMPLATE_BYTES), vouch_face_template_from_image)
    }

    /// The speaker template of an audio file (WAV, FLAC, Ogg, M4A, WebM), read in place.
    public func voiceTemplate(_ audio: Data) throws -> Template {
        try template(audio, size: Int(VOUCH_VOICE_TEMPLATE_BYTES), vouch_voice_template_from_audio)
    }

    private typealias TemplateCall = (
        OpaquePointer?, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<UInt8>?,
        UnsafeMutablePointer<UnsafeMutablePointer<CChar>?>?
    ) -> vouch_status

    private func template(_ data: Data, size: Int, _ call: TemplateCall) throws -> Template {
        try withEngine { engine in
            var template = [UInt8](repeating: 0, count: size)
            var info: UnsafeMutablePointer<CChar>?
            let status = data.withUnsafeBytes { raw in
                template.withUnsafeMutableBufferPointer { out in
                    call(engine, raw.bindMemory(to: UInt8.self).baseAddress, raw.count, out.baseAddress, &info)
                }
            }
            guard status == 0 else { throw VouchError.last(status) }
            defer { vouch_string_free(info) }
            return Template(bytes: Data(template), infoJSON: info.map { String(cString: $0) } ?? "")
        }
    }
}

/// Engines freed by this process (for tests: each engine counts once, by close() or deinit).
final class Freed: @unchecked Sendable {
    static let count = Freed()
    private let lock = NSLock()
    private var value = 0

    func add() {
        lock.lock()
        value += 1
        lock.unlock()
    }

    var current: Int {
        lock.lock()
        defer { lock.unlock() }
        return value
    }
}
