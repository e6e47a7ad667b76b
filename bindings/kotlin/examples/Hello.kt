// Hello.kt - the flow of examples/hello.c in Kotlin: open an engine, create an API key, start a
// session, give both consents, and print what each request answers.
//
// Build and run (after `cargo build --release -p vouch-ffi --features jni`):
//   kotlinc bindings/kotlin/src/main/kotlin bindings/kotlin/examples/Hello.kt -d hello.jar
//   java -Djava.library.path=target/release -cp hello.jar:/usr/share/java/kotlin-stdlib.jar HelloKt
import io.vouch.Vouch

fun main() {
    // 1. Open an engine. ":memory:" keeps everything in RAM; a real app passes a file path and keeps
    //    the keys (base64 of 32 random bytes) in the Android Keystore.
    val options = """{"database":":memory:",
        "template_key":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8=",
        "api_keys":{"hs256_secret":"AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="}}"""
    // `use` closes the engine (and its database) at the end, even after an exception.
    Vouch.open(options).use { engine ->
        // 2. Create an API key for a project; the token is shown only this once.
        val key = engine.createApiKey("""{"project_id":"demo","selected_services":["Face Recognition"]}""")
        val token = Regex("\"token\":\"([^\"]+)\"").find(key)!!.groupValues[1] // an app uses a JSON parser

        // 3. Every request carries the key as "Authorization: Bearer <token>".
        val auth = mapOf("Authorization" to "Bearer $token")
        val started = engine.request("POST", "/api-gateway/sessions/start", auth)
        println("POST /api-gateway/sessions/start -> ${started.status} ${started.body}")

        // 4. The user gives authorization consent and storage consent (needed before enrolment).
        val consent = """{"is_consent_given":true,"user_fullname":"alice"}"""
        for (path in listOf("/api-consent/consent", "/api-consent/strg-consent")) {
            val response = engine.request("POST", path, auth, consent)
            println("POST $path -> ${response.status} ${response.body}")
        }
    }
}
