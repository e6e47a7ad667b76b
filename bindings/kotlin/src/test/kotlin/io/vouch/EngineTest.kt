// The Kotlin binding's tests on a real JVM against the real libvouch.so (jni feature) and the
// committed models. Run by scripts/kotlin-tests: `java -Djava.library.path=<dir> io.vouch.EngineTestKt
// <repository root>`. Each test prints "ok - name" or "FAIL - name: why"; the last line is
// "kotlin: N passed, M failed" and the exit status is 1 when anything failed.
package io.vouch

import java.io.File
import java.nio.ByteBuffer
import java.security.SecureRandom
import java.util.Base64
import java.util.concurrent.CountDownLatch
import java.util.concurrent.atomic.AtomicInteger
import kotlin.concurrent.thread

private var passed = 0
private var failed = 0

private fun test(name: String, body: () -> Unit) {
    try {
        body()
        passed++
        println("ok - $name")
    } catch (t: Throwable) {
        failed++
        println("FAIL - $name: $t")
        t.printStackTrace(System.out)
    }
}

private fun expect(condition: Boolean, message: () -> String) {
    if (!condition) throw AssertionError(message())
}

private inline fun <reified T : Throwable> thrown(block: () -> Unit): T {
    try {
        block()
    } catch (t: Throwable) {
        if (t is T) return t
        throw AssertionError("expected ${T::class.java.simpleName}, got $t")
    }
    throw AssertionError("expected ${T::class.java.simpleName}, nothing was thrown")
}

private fun randomKey(): String {
    val bytes = ByteArray(32)
    SecureRandom().nextBytes(bytes)
    return Base64.getEncoder().encodeToString(bytes)
}

/** A string field of a flat JSON answer (enough for tokens and ids; apps use a JSON parser). */
private fun field(json: String, name: String): String {
    val match = Regex("\"" + Regex.escape(name) + "\":\"([^\"]*)\"").find(json)
        ?: throw AssertionError("no \"$name\" in $json")
    return match.groupValues[1]
}

private fun memoryOptions(extra: String = ""): String =
    "{\"database\":\":memory:\",\"template_key\":\"${randomKey()}\"$extra}"

/** Opens and drops engines without closing them, in a frame of its own so none stays reachable. */
private fun abandon(count: Int) {
    repeat(count) { Vouch.open(memoryOptions()) }
}

/** Runs the GC until [done] or 20 s pass. */
private fun collectUntil(done: () -> Boolean): Boolean {
    val deadline = System.nanoTime() + 20_000_000_000L
    while (!done() && System.nanoTime() < deadline) {
        System.gc()
        Thread.sleep(20)
    }
    return done()
}

fun main(args: Array<String>) {
    val root = File(if (args.isNotEmpty()) args[0] else ".").absoluteFile
    val media = File(root, "tests/media")
    check(File(root, "models").isDirectory) { "run from the repository root (no models/ under $root)" }
    val database = File.createTempFile("vouch-kotlin", ".sqlite")
    database.delete()
    val options = "{\"database\":\"${database.path}\",\"template_key\":\"${randomKey()}\"," +
        "\"api_keys\":{\"hs256_secret\":\"${randomKey()}\"},\"models_dir\":\"${File(root, "models").path}\"}"
    // One engine with models for the whole run (loading them is the expensive part).
    val engine = Vouch.open(options)
    val services = "[\"Active Speaker Detection\",\"Visual Speech Recognition\"," +
        "\"Face Liveness Detection\",\"Voice Recognition\",\"Face Recognition\"]"
    val key = engine.createApiKey("{\"project_id\":\"p1\",\"selected_services\":$services}")
    val auth = mapOf("Authorization" to "Bearer " + field(key, "token"))

    test("the version is the crate's") {
        val manifest = File(root, "Cargo.toml").readText()
        val expected = Regex("(?m)^version = \"([^\"]+)\"").find(manifest)!!.groupValues[1]
        expect(Vouch.version == expected) { "${Vouch.version} != $expected" }
    }

    test("bad options throw with the status and a message naming the field") {
        val short = thrown<VouchException> {
            Vouch.open("{\"database\":\":memory:\",\"template_key\":\"AAAA\"}")
        }
        expect(short.status == VouchException.INVALID_OPTIONS) { "status ${short.status}" }
        expect(short.message!!.contains("template_key must decode to 32 bytes, got 3")) { "${short.message}" }
        expect(short.statusText.isNotEmpty()) { "no status text" }
        val unknown = thrown<VouchException> { Vouch.open(memoryOptions(",\"treads\":2")) }
        expect(unknown.status == VouchException.INVALID_OPTIONS && unknown.message!!.contains("unknown field `treads`")) {
            "${unknown.status} ${unknown.message}"
        }
        val notJson = thrown<VouchException> { Vouch.open("{database") }
        expect(notJson.status == VouchException.INVALID_OPTIONS || notJson.status == VouchException.INVALID_JSON) {
            "${notJson.status} ${notJson.message}"
        }
        val nul = thrown<VouchException> { Vouch.open("{\"database\":\"a\u0000b\"}") }
        expect(nul.status == VouchException.INVALID_ARGUMENT && nul.message!!.contains("NUL")) { "${nul.message}" }
    }

    test("the verification flow through request: consents, session, process-video") {
        val consent = "{\"is_consent_given\":true,\"user_fullname\":\"ann\"}"
        for (path in listOf("/api-consent/consent", "/api-consent/strg-consent")) {
            val response = engine.request("POST", path, auth, consent)
            expect(response.status == 200) { "$path: ${response.status} ${response.body}" }
        }
        val started = engine.request("POST", "/api-gateway/sessions/start", auth)
        expect(started.status == 200) { started.body }
        val session = field(started.body, "data")
        val video = File(media, "photo_speaking.mp4").readBytes()
        val response = engine.request(
            "POST", "/api-gateway/process-video",
            auth + mapOf("X-User-Fullname" to "ann", "X-Session-ID" to session),
            parts = listOf(
                Part("video", video, "selfie.mp4", "video/mp4"),
                Part("phrase", "please verify me now".toByteArray())
            )
        )
        expect(response.status == 200) { "${response.status} ${response.body}" }
        for (service in listOf("Active Speaker Detection", "Visual Speech Recognition",
                "Face Liveness Detection", "Voice Recognition", "Face Recognition")) {
            expect(response.body.contains("\"$service\"")) { "no $service in ${response.body}" }
        }
        expect(response.body.contains("\"Face Liveness Detection\":{\"code\":1,\"result\":false")) {
            "a still photo passed liveness: ${response.body}"
        }
        expect(response.body.contains("\"status\":\"fail\"")) { response.body }
        expect(response.header("x-auto-enroll") == "false") { "${response.headers}" }
        expect(response.header("X-Request-Id")!!.isNotEmpty()) { "${response.headers}" }
    }

    test("HTTP errors are responses, unusable arguments are exceptions") {
        val anonymous = engine.request("POST", "/api-gateway/sessions/start")
        expect(anonymous.status == 401) { "${anonymous.status} ${anonymous.body}" }
        val unknown = engine.request("GET", "/no/such/path", auth)
        expect(unknown.status == 404) { "${unknown.status}" }
        val nul = thrown<VouchException> { engine.request("POST", "/api-gateway/sessions/\u0000start", auth) }
        expect(nul.status == VouchException.INVALID_ARGUMENT) { "${nul.status} ${nul.message}" }
        val quoted = engine.request("POST", "/api-gateway/sessions/start", mapOf("Authorization" to "Bearer \"x\\y\n"))
        // The spec answers key validation failures with 500; what matters here is that the quote,
        // backslash and newline reached the engine as the header's value.
        expect(quoted.status == 500 && quoted.body.contains("invalid api key")) {
            "header JSON escaping: ${quoted.status} ${quoted.body}"
        }
    }

    test("a face template from bytes and from a direct buffer, compared") {
        val image = File(media, "face_astronaut.png").readBytes()
        val fromBytes = engine.faceTemplate(image)
        expect(fromBytes.bytes.size == 513) { "size ${fromBytes.bytes.size}" }
        expect(fromBytes.infoJson.contains("\"faces\"") || fromBytes.infoJson.startsWith("{")) { fromBytes.infoJson }
        val direct = ByteBuffer.allocateDirect(image.size + 8)
        direct.position(8)
        direct.put(image)
        direct.position(8)
        val fromBuffer = engine.faceTemplate(direct)
        expect(fromBuffer.bytes.contentEquals(fromBytes.bytes)) { "the direct buffer gave another template" }
        expect(direct.position() == 8) { "the buffer's position moved" }
        val fromHeap = engine.faceTemplate(ByteBuffer.wrap(image))
        expect(fromHeap.bytes.contentEquals(fromBytes.bytes)) { "the heap buffer gave another template" }
        val same = Vouch.compareFaces(fromBytes.bytes, fromBuffer.bytes)
        expect(same.isMatch && same.distance < 1e-4f && same.probability > 0.5f) {
            "${same.distance} ${same.probability} ${same.isMatch}"
        }
        val noFace = thrown<VouchException> { engine.faceTemplate(File(media, "marker.png").readBytes()) }
        expect(noFace.status == VouchException.NO_FACE) { "${noFace.status} ${noFace.message}" }
        val garbage = thrown<VouchException> { Vouch.compareFaces(ByteArray(3), fromBytes.bytes) }
        expect(garbage.status == VouchException.INVALID_ARGUMENT) { "${garbage.status}" }
    }

    test("a voice template, compared; silence and tones are refused") {
        val speech = engine.voiceTemplate(File(media, "speech.wav").readBytes())
        expect(speech.bytes.size == 769) { "size ${speech.bytes.size}" }
        expect(speech.infoJson.contains("speech_seconds")) { speech.infoJson }
        val opus = engine.voiceTemplate(File(media, "speech_48k_stereo.ogg").readBytes())
        val m = Vouch.compareVoices(speech.bytes, opus.bytes)
        expect(m.distance >= 0f && m.distance <= 2f && m.probability in 0f..1f) { "${m.distance} ${m.probability}" }
        val tone = thrown<VouchException> { engine.voiceTemplate(File(media, "tone.wav").readBytes()) }
        expect(tone.status == VouchException.NO_SPEECH) { "${tone.status} ${tone.message}" }
        val faceAsVoice = thrown<VouchException> {
            Vouch.compareVoices(speech.bytes, engine.faceTemplate(File(media, "face_astronaut.png").readBytes()).bytes)
        }
        expect(faceAsVoice.status == VouchException.INVALID_ARGUMENT) { "${faceAsVoice.status}" }
    }

    test("one engine serves many threads at once") {
        val errors = AtomicInteger()
        val threads = (1..8).map {
            thread {
                repeat(20) {
                    val response = engine.request("POST", "/api-gateway/sessions/start", auth)
                    if (response.status != 200) errors.incrementAndGet()
                }
            }
        }
        threads.forEach { it.join() }
        expect(errors.get() == 0) { "${errors.get()} requests failed" }
    }

    test("closing from several threads frees once; later calls throw IllegalStateException") {
        val before = NativeHandle.freed.get()
        val shared = Vouch.open(memoryOptions())
        val start = CountDownLatch(1)
        val closers = (1..8).map { thread { start.await(); shared.close() } }
        start.countDown()
        closers.forEach { it.join() }
        expect(NativeHandle.freed.get() - before == 1L) { "freed ${NativeHandle.freed.get() - before} times" }
        expect(shared.isClosed) { "not closed" }
        thrown<IllegalStateException> { shared.request("POST", "/api-gateway/sessions/start") }
        shared.close()
        expect(NativeHandle.freed.get() - before == 1L) { "a second close freed again" }
    }

    test("close waits for running calls; calls racing it answer or throw IllegalStateException") {
        val racing = Vouch.open(memoryOptions(",\"api_keys\":{\"hs256_secret\":\"${randomKey()}\"}"))
        val token = field(racing.createApiKey("{\"project_id\":\"p2\",\"selected_services\":[\"Face Recognition\"]}"), "token")
        val answered = AtomicInteger()
        val refused = AtomicInteger()
        val other = AtomicInteger()
        // Each worker calls until the engine refuses (or 30 s pass); the close lands mid-stream.
        val deadline = System.nanoTime() + 30_000_000_000L
        val workers = (1..6).map {
            thread {
                while (System.nanoTime() < deadline) {
                    try {
                        val r = racing.request("POST", "/api-gateway/sessions/start", mapOf("Authorization" to "Bearer $token"))
                        if (r.status == 200) answered.incrementAndGet() else other.incrementAndGet()
                    } catch (e: IllegalStateException) {
                        refused.incrementAndGet()
                        break
                    } catch (t: Throwable) {
                        other.incrementAndGet()
                        break
                    }
                }
            }
        }
        while (answered.get() < 60 && System.nanoTime() < deadline) Thread.sleep(1)
        racing.close()
        workers.forEach { it.join() }
        expect(other.get() == 0) { "${other.get()} calls failed otherwise" }
        expect(refused.get() == 6) { "${refused.get()} of 6 workers saw the engine closed" }
        expect(racing.isClosed) { "not closed" }
    }

    test("the garbage collector frees dropped engines once, and never a closed one") {
        val collectedBefore = Cleaner.collected.get()
        val freedBefore = NativeHandle.freed.get()
        abandon(20)
        expect(collectUntil { Cleaner.collected.get() - collectedBefore >= 20 }) {
            "only ${Cleaner.collected.get() - collectedBefore} of 20 collected"
        }
        // Closed engines then dropped: the cleaner must not free them again.
        repeat(10) { Vouch.open(memoryOptions()).close() }
        abandon(1) // a sentinel the cleaner reaches after the closed ones are gone
        expect(collectUntil { Cleaner.collected.get() - collectedBefore >= 21 }) { "the sentinel was not collected" }
        Thread.sleep(200)
        System.gc()
        Thread.sleep(200)
        expect(Cleaner.collected.get() - collectedBefore == 21L) {
            "collected ${Cleaner.collected.get() - collectedBefore}, expected 21"
        }
        expect(NativeHandle.freed.get() - freedBefore == 31L) {
            "freed ${NativeHandle.freed.get() - freedBefore}, expected 31 (20 dropped + 10 closed + 1)"
        }
    }

    test("use closes the engine") {
        val used = Vouch.open(memoryOptions())
        used.use { expect(!it.isClosed) { "closed too early" } }
        expect(used.isClosed) { "use did not close" }
    }

    engine.close()
    database.delete()
    println("kotlin: $passed passed, $failed failed")
    if (failed != 0) System.exit(1)
}
