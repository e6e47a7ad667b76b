// An open engine: the verification and scheduler APIs through request(), and the face and voice
// primitives. Thread-safe; close() (or the garbage collector) frees it once, after running calls.
package io.vouch

import java.io.Closeable
import java.nio.ByteBuffer

/**
 * An engine opened by [Vouch.open] (Closeable, so an AutoCloseable: `use {}` and
 * try-with-resources close it). Every method may be called from many threads at once. [close]
 * waits for calls still running, then frees the engine; later calls throw IllegalStateException.
 * An engine the app drops without closing is freed by a background cleaner; closing it is still
 * better, because the database stays open until then.
 */
class Engine internal constructor(pointer: Long) : Closeable {
    private val handle = NativeHandle(pointer) { Native.engineFree(it) }
    private val watch = Cleaner.register(this, handle)

    /** True after [close]. */
    val isClosed: Boolean
        get() = handle.isReleased

    /**
     * Runs one operation of the verification or job-scheduler API, e.g.
     * `request("POST", "/api-gateway/sessions/start", mapOf("Authorization" to "Bearer $token"))`.
     * [body] is a JSON body (consent, session end), [parts] the multipart parts (process-video's
     * `video`). HTTP errors are ordinary responses; VouchException means the arguments themselves
     * were unusable.
     */
    fun request(
        method: String,
        path: String,
        headers: Map<String, String> = emptyMap(),
        body: ByteArray? = null,
        parts: List<Part> = emptyList()
    ): Response {
        val answer = handle.use {
            Native.request(
                it, method, path, Json.objectOf(headers),
                Array(parts.size) { i -> parts[i].name },
                Array(parts.size) { i -> parts[i].filename },
                Array(parts.size) { i -> parts[i].contentType },
                Array(parts.size) { i -> parts[i].data },
                body
            )
        }
        val headerMap = LinkedHashMap<String, String>()
        var i = 2
        while (i + 1 < answer.size) {
            headerMap[answer[i]] = answer[i + 1]
            i += 2
        }
        return Response(answer[0].toInt(), answer[1], headerMap)
    }

    /** [request] with a JSON body given as a string. */
    fun request(method: String, path: String, headers: Map<String, String>, json: String): Response =
        request(method, path, headers, json.toByteArray(Charsets.UTF_8))

    /**
     * Creates an HS256 API key (the engine needs `api_keys.hs256_secret`): [requestJson] is
     * `{"project_id": ..., "selected_services": [...]}`; the answer's JSON carries the token, shown
     * only here.
     */
    fun createApiKey(requestJson: String): String = handle.use { Native.apiKeyCreate(it, requestJson) }

    /** The template of the largest face in a JPEG or PNG file. */
    fun faceTemplate(image: ByteArray): Template = template(false, image)

    /** As [faceTemplate]; a direct buffer's remaining bytes are read in place, without a copy. */
    fun faceTemplate(image: ByteBuffer): Template = template(false, image)

    /** The speaker template of an audio file (WAV, FLAC, Ogg, M4A, WebM). */
    fun voiceTemplate(audio: ByteArray): Template = template(true, audio)

    /** As [voiceTemplate]; a direct buffer's remaining bytes are read in place, without a copy. */
    fun voiceTemplate(audio: ByteBuffer): Template = template(true, audio)

    private fun template(voice: Boolean, data: ByteArray): Template =
        unpack(handle.use { Native.templateFromBytes(it, voice, data) })

    private fun template(voice: Boolean, data: ByteBuffer): Template {
        if (!data.isDirect) {
            val copy = ByteArray(data.remaining())
            data.duplicate().get(copy)
            return template(voice, copy)
        }
        return unpack(handle.use { Native.templateFromBuffer(it, voice, data, data.position(), data.limit()) })
    }

    private fun unpack(pair: Array<Any>): Template = Template(pair[0] as ByteArray, pair[1] as String)

    /** Frees the engine after the calls still running on it; idempotent. */
    override fun close() {
        handle.release()
        Cleaner.forget(watch)
    }
}

/** The little JSON the binding writes itself (header maps); responses are left to the app's parser. */
internal object Json {
    fun objectOf(map: Map<String, String>): String? {
        if (map.isEmpty()) return null
        return map.entries.joinToString(",", "{", "}") { string(it.key) + ":" + string(it.value) }
    }

    fun string(value: String): String {
        val out = StringBuilder(value.length + 2).append('"')
        for (c in value) {
            when {
                c == '"' -> out.append("\\\"")
                c == '\\' -> out.append("\\\\")
                c < ' ' -> out.append(String.format("\\u%04x", c.toInt()))
                else -> out.append(c)
            }
        }
        return out.append('"').toString()
    }
}
