// One to one with bindings/kotlin/src/test/kotlin/io/vouch/EngineTest.kt (same names, same
// checks; ARC replaces the garbage collector in the last two). Reads models/ and tests/media/ from
// the repository this package sits in, so run it from a checkout (`swift test` on macOS, after
// build-xcframework.sh). Not run on Vouch's build machines: see README.md.
import Foundation
import XCTest
@testable import Vouch

private let root = URL(fileURLWithPath: #filePath)
    .deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent()
private let media = root.appendingPathComponent("tests/media")

private func randomKey() -> String {
    Data((0..<32).map { _ in UInt8.random(in: 0...255) }).base64EncodedString()
}

private func field(_ json: String, _ name: String) throws -> String {
    let object = try JSONSerialization.jsonObject(with: Data(json.utf8)) as? [String: Any]
    return try XCTUnwrap(object?[name] as? String, "no \(name) in \(json)")
}

private func memoryOptions(_ extra: String = "") -> String {
    "{\"database\":\":memory:\",\"template_key\":\"\(randomKey())\"\(extra)}"
}

private func read(_ name: String) throws -> Data {
    try Data(contentsOf: media.appendingPathComponent(name))
}

final class EngineTests: XCTestCase {
    static var engine: Engine!
    static var auth: [String: String] = [:]

    override class func setUp() {
        let database = FileManager.default.temporaryDirectory
            .appendingPathComponent("vouch-swift-\(UUID().uuidString).sqlite").path
        let options = "{\"database\":\"\(database)\",\"template_key\":\"\(randomKey())\"," +
            "\"api_keys\":{\"hs256_secret\":\"\(randomKey())\"}," +
            "\"models_dir\":\"\(root.appendingPathComponent("models").path)\"}"
        engine = try! Vouch.open(options)
        let services = "[\"Active Speaker Detection\",\"Visual Speech Recognition\"," +
            "\"Face Liveness Detection\",\"Voice Recognition\",\"Face Recognition\"]"
        let key = try! engine.createApiKey("{\"project_id\":\"p1\",\"selected_services\":\(services)}")
        auth = ["Authorization": "Bearer " + (try! field(key, "token"))]
    }

    override class func tearDown() {
        engine.close()
    }

    var engine: Engine { Self.engine }
    var auth: [String: String] { Self.auth }

    func testTheVersionIsTheCrates() throws {
        let manifest = try String(contentsOf: root.appendingPathComponent("Cargo.toml"))
        let line = manifest.split(separator: "\n").first { $0.hasPrefix("version = \"") }
        XCTAssertEqual(Vouch.version, line.map { String($0.dropFirst(11).dropLast()) })
    }

    func testBadOptionsThrowWithTheStatusAndAMessageNamingTheField() {
        XCTAssertThrowsError(try Vouch.open("{\"database\":\":memory:\",\"template_key\":\"AAAA\"}")) {
            let e = $0 as! VouchError
            XCTAssertEqual(e.status, VouchError.invalidOptions)
            XCTAssertTrue(e.message.contains("template_key must decode to 32 bytes, got 3"), e.message)
            XCTAssertFalse(e.statusText.isEmpty)
        }
        XCTAssertThrowsError(try Vouch.open(memoryOptions(",\"treads\":2"))) {
            XCTAssertTrue(($0 as! VouchError).message.contains("unknown field `treads`"))
        }
        XCTAssertThrowsError(try Vouch.open("{database")) {
            XCTAssertTrue([VouchError.invalidOptions, VouchError.invalidJSON].contains(($0 as! VouchError).status))
        }
        XCTAssertThrowsError(try Vouch.open("{\"database\":\"a\u{0}b\"}")) {
            XCTAssertEqual(($0 as! VouchError).status, VouchError.invalidArgument)
        }
    }

    func testTheVerificationFlowThroughRequest() throws {
        let consent = "{\"is_consent_given\":true,\"user_fullname\":\"ann\"}"
        for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
            XCTAssertEqual(try engine.request("POST", path, headers: auth, json: consent).status, 200)
        }
        let started = try engine.request("POST", "/api-gateway/sessions/start", headers: auth)
        XCTAssertEqual(started.status, 200, started.body)
        let session = try field(started.body, "data")
        var headers = auth
        headers["X-User-Fullname"] = "ann"
        headers["X-Session-ID"] = session
        let response = try engine.request("POST", "/api-gateway/process-video", headers: headers, parts: [
            Part(name: "video", data: try read("photo_speaking.mp4"), filename: "selfie.mp4", contentType: "video/mp4"),
            Part(name: "phrase", data: Data("please verify me now".utf8)),
        ])
        XCTAssertEqual(response.status, 200, response.body)
        for service in ["Active Speaker Detection", "Visual Speech Recognition", "Face Liveness Detection",
                        "Voice Recognition", "Face Recognition"] {
            XCTAssertTrue(response.body.contains("\"\(service)\""), response.body)
        }
        XCTAssertTrue(response.body.contains("\"Face Liveness Detection\":{\"code\":1,\"result\":false"), response.body)
        XCTAssertTrue(response.body.contains("\"status\":\"fail\""), response.body)
        XCTAssertEqual(response.header("x-auto-enroll"), "false")
        XCTAssertFalse((response.header("X-Request-Id") ?? "").isEmpty)
    }

    func testHTTPErrorsAreResponsesUnusableArgumentsAreErrors() throws {
        XCTAssertEqual(try engine.request("POST", "/api-gateway/sessions/start").status, 401)
        XCTAssertEqual(try engine.request("GET", "/no/such/path", headers: auth).status, 404)
        XCTAssertThrowsError(try engine.request("POST", "/api-gateway/sessions/\u{0}start", headers: auth)) {
            XCTAssertEqual(($0 as! VouchError).status, VouchError.invalidArgument)
        }
        let quoted = try engine.request("POST", "/api-gateway/sessions/start",
                                        headers: ["Authorization": "Bearer \"x\\y\n"])
        XCTAssertEqual(quoted.status, 500)  // the spec's answer to a malformed key
        XCTAssertTrue(quoted.body.contains("invalid api key"), quoted.body)
    }

    func testAFaceTemplateComparedAndRefusals() throws {
        let template = try engine.faceTemplate(try read("face_astronaut.png"))
        XCTAssertEqual(template.bytes.count, 513)
        let same = try Vouch.compareFaces(template.bytes, template.bytes)
        XCTAssertTrue(same.isMatch)
        XCTAssertLessThan(same.distance, 1e-4)
        XCTAssertGreaterThan(same.probability, 0.5)
        XCTAssertThrowsError(try engine.faceTemplate(try read("marker.png"))) {
            XCTAssertEqual(($0 as! VouchError).status, VouchError.noFace)
        }
        XCTAssertThrowsError(try Vouch.compareFaces(Data(count: 3), template.bytes)) {
            XCTAssertEqual(($0 as! VouchError).status, VouchError.invalidArgument)
        }
    }

    func testAVoiceTemplateComparedSilenceAndTonesAreRefused() throws {
        let speech = try engine.voiceTemplate(try read("speech.wav"))
        XCTAssertEqual(speech.bytes.count, 769)
        XCTAssertTrue(speech.infoJSON.contains("speech_seconds"))
        let opus = try engine.voiceTemplate(try read("speech_48k_stereo.ogg"))
        let m = try Vouch.compareVoices(speech.bytes, opus.bytes)
        XCTAssertTrue((0...2).contains(m.distance) && (0...1).contains(m.probability))
        XCTAssertThrowsError(try engine.voiceTemplate(try read("tone.wav"))) {
            XCTAssertEqual(($0 as! VouchError).status, VouchError.noSpeech)
        }
    }

    func testOneEngineServesManyThreadsAtOnce() {
        let engine = self.engine, auth = self.auth
        let failures = Freed()  // reused as a thread-safe counter
        DispatchQueue.concurrentPerform(iterations: 160) { _ in
            if (try? engine.request("POST", "/api-gateway/sessions/start", headers: auth))?.status != 200 {
                failures.add()
            }
        }
        XCTAssertEqual(failures.current, 0)
    }

    func testClosingFromSeveralThreadsFreesOnce() throws {
        let before = Freed.count.current
        let shared = try Vouch.open(memoryOptions())
        DispatchQueue.concurrentPerform(iterations: 8) { _ in shared.close() }
        XCTAssertEqual(Freed.count.current - before, 1)
        XCTAssertTrue(shared.isClosed)
        XCTAssertThrowsError(try shared.request("POST", "/api-gateway/sessions/start")) {
            XCTAssertTrue($0 is EngineClosedError)
        }
    }

    func testCloseWaitsForRunningCallsCallsRacingItAnswerOrThrowClosed() throws {
        let racing = try Vouch.open(memoryOptions(",\"api_keys\":{\"hs256_secret\":\"\(randomKey())\"}"))
        let token = try field(try racing.createApiKey(
            "{\"project_id\":\"p2\",\"selected_services\":[\"Face Recognition\"]}"), "token")
        let answered = Freed(), refused = Freed(), other = Freed()
        let workers = DispatchGroup()
        for _ in 0..<6 {
            DispatchQueue.global().async(group: workers) {
                let deadline = Date().addingTimeInterval(30)
                while Date() < deadline {
                    do {
                        let r = try racing.request("POST", "/api-gateway/sessions/start",
                                                   headers: ["Authorization": "Bearer \(token)"])
                        if r.status == 200 { answered.add() } else { other.add() }
                    } catch is EngineClosedError {
                        refused.add()
                        return
                    } catch {
                        other.add()
                        return
                    }
                }
            }
        }
        let deadline = Date().addingTimeInterval(30)
        while answered.current < 60 && Date() < deadline { usleep(1000) }
        racing.close()
        workers.wait()
        XCTAssertEqual(other.current, 0)
        XCTAssertEqual(refused.current, 6)
    }

    func testDroppingAnEngineFreesItOnceAndNeverAClosedOneAgain() throws {
        let before = Freed.count.current
        for _ in 0..<20 { _ = try Vouch.open(memoryOptions()) }  // ARC frees each at once
        for _ in 0..<10 { try Vouch.open(memoryOptions()).close() }  // closed, then deinit: no second free
        XCTAssertEqual(Freed.count.current - before, 30)
    }
}
