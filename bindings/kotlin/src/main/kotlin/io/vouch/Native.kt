// The native methods of libvouch.so (built with the `jni` feature; src/ffi/java.rs). Internal: the
// public API is Vouch, Engine and their value classes. Handles are the C pointers as Long.
package io.vouch

internal object Native {
    init {
        System.loadLibrary("vouch")
    }

    @JvmStatic external fun version(): String
    @JvmStatic external fun statusText(status: Int): String
    @JvmStatic external fun engineNew(options: String): Long
    @JvmStatic external fun engineFree(engine: Long)

    /** Answers `[status, body, name1, value1, ...]`. */
    @JvmStatic external fun request(
        engine: Long,
        method: String,
        path: String,
        headersJson: String?,
        partNames: Array<String>,
        partFilenames: Array<String?>,
        partContentTypes: Array<String?>,
        partData: Array<ByteArray>,
        body: ByteArray?
    ): Array<String>

    @JvmStatic external fun apiKeyCreate(engine: Long, requestJson: String): String

    /** Answers `[template: ByteArray, infoJson: String]`. */
    @JvmStatic external fun templateFromBytes(engine: Long, voice: Boolean, data: ByteArray): Array<Any>

    /** As [templateFromBytes], over `[position, limit)` of a direct buffer, read in place. */
    @JvmStatic external fun templateFromBuffer(
        engine: Long,
        voice: Boolean,
        buffer: java.nio.ByteBuffer,
        position: Int,
        limit: Int
    ): Array<Any>

    /** Answers `[distance, probability, isMatch (1 or 0)]`. */
    @JvmStatic external fun compare(voice: Boolean, a: ByteArray, b: ByteArray): FloatArray
}
