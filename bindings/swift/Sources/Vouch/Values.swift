// The values the engine takes and gives; mirrors bindings/kotlin/.../Values.kt and VouchException.kt.
import Foundation
import VouchFFI

/// A refused call: the `vouch_status` of include/vouch.h and why (never biometric data). HTTP errors
/// (400, 401...) are not errors here: they are ordinary ``Response``s, as from the cloud service.
public struct VouchError: Error, Sendable, CustomStringConvertible {
    public let status: UInt32
    public let message: String

    /// The header's fixed description of ``status``.
    public var statusText: String { String(cString: vouch_status_text(status)) }
    public var description: String { "vouch status \(status): \(message)" }

    public static let nullArgument: UInt32 = 1
    public static let invalidUTF8: UInt32 = 2
    public static let invalidJSON: UInt32 = 3
    public static let invalidOptions: UInt32 = 4
    public static let invalidArgument: UInt32 = 5
    public static let notFound: UInt32 = 6
    public static let conflict: UInt32 = 7
    public static let authFailed: UInt32 = 8
    public static let forbidden: UInt32 = 9
    public static let consentRequired: UInt32 = 10
    public static let templateUnreadable: UInt32 = 11
    public static let storage: UInt32 = 12
    public static let media: UInt32 = 13
    public static let noFace: UInt32 = 14
    public static let model: UInt32 = 15
    public static let noSpeech: UInt32 = 16
    public static let noDocument: UInt32 = 17
    public static let creditsExhausted: UInt32 = 18
    public static let dailyLimit: UInt32 = 19
    public static let panic: UInt32 = 100

    /// The status a call returned, with this thread's last error message.
    static func last(_ status: vouch_status) -> VouchError {
        VouchError(status: UInt32(status), message: String(cString: vouch_last_error_message()))
    }
}

/// Swift strings reach C as NUL-terminated copies, so an embedded NUL would silently cut them:
/// refuse it, as the Kotlin binding does.
func refuseNUL(_ value: String, _ what: String) throws {
    if value.utf8.contains(0) {
        throw VouchError(status: VouchError.invalidArgument, message: "\(what) contains a NUL character")
    }
}

/// A call on an engine after ``Engine/close()`` (Kotlin: IllegalStateException).
public struct EngineClosedError: Error, Sendable {}

/// One multipart part of a request, e.g. `Part(name: "video", data: clip, filename: "clip.mp4")`.
public struct Part: Sendable {
    public var name: String
    public var data: Data
    public var filename: String?
    public var contentType: String?

    public init(name: String, data: Data, filename: String? = nil, contentType: String? = nil) {
        self.name = name
        self.data = data
        self.filename = filename
        self.contentType = contentType
    }
}

/// What the engine answered: the HTTP status, the JSON body and the headers, as the cloud service.
public struct Response: Sendable {
    public let status: Int
    public let body: String
    public let headers: [String: String]

    /// One header's value, the name compared case-insensitively; nil when absent.
    public func header(_ name: String) -> String? {
        headers.first { $0.key.caseInsensitiveCompare(name) == .orderedSame }?.value
    }
}

/// A face or voice template (opaque bytes to store or compare) and the quality report as JSON.
public struct Template: Sendable {
    public let bytes: Data
    public let infoJSON: String
}

/// A comparison: distance (lower is more alike), calibrated probability of the same person, and
/// the decision at the default threshold (false-match rate 1e-3).
public struct Match: Sendable {
    public let distance: Float
    public let probability: Float
    public let isMatch: Bool
}
