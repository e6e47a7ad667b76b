// The entry point: open an engine, compare templates, the library's version. Mirrors the Kotlin
// binding's Vouch object (bindings/kotlin/src/main/kotlin/io/vouch/Vouch.kt).
import Foundation
import VouchFFI

/// Vouch, the offline biometric verification engine, for Swift.
public enum Vouch {
    /// Opens an engine from JSON options (`database`, `template_key`, `api_keys`, `threads`,
    /// `models_dir`; see the README). A wrong option throws ``VouchError`` with status
    /// ``VouchError/invalidOptions`` and a message that names the field.
    public static func open(_ optionsJSON: String) throws -> Engine {
        try refuseNUL(optionsJSON, "options")
        var engine: OpaquePointer?
        let status = vouch_engine_new(optionsJSON, &engine)
        guard status == 0, let engine else { throw VouchError.last(status) }
        return Engine(engine)
    }

    /// The library's version, `MAJOR.MINOR.PATCH`.
    public static var version: String { String(cString: vouch_version()) }

    /// Compares two face templates (well under 0.1 ms; no engine needed).
    public static func compareFaces(_ a: Data, _ b: Data) throws -> Match {
        try compare(a, b, vouch_face_compare)
    }

    /// Compares two voice templates (well under 0.1 ms; no engine needed).
    public static func compareVoices(_ a: Data, _ b: Data) throws -> Match {
        try compare(a, b, vouch_voice_compare)
    }

    private typealias Compare = (
        UnsafePointer<UInt8>?, Int, UnsafePointer<UInt8>?, Int, UnsafeMutablePointer<vouch_match>?
    ) -> vouch_status

    private static func compare(_ a: Data, _ b: Data, _ call: Compare) throws -> Match {
        var m = vouch_match()
        let status = a.withUnsafeBytes { a in
            b.withUnsafeBytes { b in
                call(a.bindMemory(to: UInt8.self).baseAddress, a.count,
                     b.bindMemory(to: UInt8.self).baseAddress, b.count, &m)
            }
        }
        guard status == 0 else { throw VouchError.last(status) }
        return Match(distance: m.distance, probability: m.probability, isMatch: m.is_match != 0)
    }
}
