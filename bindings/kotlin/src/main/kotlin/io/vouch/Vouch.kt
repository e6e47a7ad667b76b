// The entry point: open an engine, compare templates, the library's version.
package io.vouch

/**
 * Vouch, the offline biometric verification engine, for Kotlin and Java (Android API 21+; any JVM
 * 8+). Loads `libvouch.so` built with the `jni` feature.
 */
object Vouch {
    /**
     * Opens an engine from JSON options (`database`, `template_key`, `api_keys`, `threads`,
     * `models_dir`; see the README). A wrong option throws [VouchException] with status
     * [VouchException.INVALID_OPTIONS] and a message that names the field.
     */
    @JvmStatic
    fun open(optionsJson: String): Engine = Engine(Native.engineNew(optionsJson))

    /** The library's version, `MAJOR.MINOR.PATCH`. */
    @JvmStatic
    val version: String
        get() = Native.version()

    /** Compares two face templates (well under 0.1 ms; no engine needed). */
    @JvmStatic
    fun compareFaces(a: ByteArray, b: ByteArray): Match = match(Native.compare(false, a, b))

    /** Compares two voice templates (well under 0.1 ms; no engine needed). */
    @JvmStatic
    fun compareVoices(a: ByteArray, b: ByteArray): Match = match(Native.compare(true, a, b))

    private fun match(m: FloatArray): Match = Match(m[0], m[1], m[2] != 0f)
}
