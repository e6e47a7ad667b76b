// Hello.swift - the flow of examples/hello.c in Swift: open an engine, create an API key, start a
// session, give both consents, and print what each request answers. Not compiled on Vouch's build
// machines (see README.md); on a Mac, after build-xcframework.sh, add it as an executable target
// depending on "Vouch", or paste it into an app.
import Foundation
import Vouch

struct NoToken: Error {}

func hello() throws {
    // 1. Open an engine. ":memory:" keeps everything in RAM; a real app passes a file path and keeps
    //    the keys (base64 of 32 random bytes) in the Keychain.
    let options = """
        {"database":":memory:",
         "template_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
         "api_keys":{"hs256_secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}}
        """
    let engine = try Vouch.open(options)
    defer { engine.close() }  // also closes the database

    // 2. Create an API key for a project; the token is shown only this once.
    let key = try engine.createApiKey(#"{"project_id":"demo","selected_services":["Face Recognition"]}"#)
    let object = try JSONSerialization.jsonObject(with: Data(key.utf8)) as? [String: Any]
    guard let token = object?["token"] as? String else { throw NoToken() }

    // 3. Every request carries the key as "Authorization: Bearer <token>".
    let auth = ["Authorization": "Bearer \(token)"]
    let started = try engine.request("POST", "/api-gateway/sessions/start", headers: auth)
    print("POST /api-gateway/sessions/start -> \(started.status) \(started.body)")

    // 4. The user gives authorization consent and storage consent (needed before enrolment).
    let consent = #"{"is_consent_given":true,"user_fullname":"alice"}"#
    for path in ["/api-consent/consent", "/api-consent/strg-consent"] {
        let response = try engine.request("POST", path, headers: auth, json: consent)
        print("POST \(path) -> \(response.status) \(response.body)")
    }
}

try hello()
