// A failed library call: the C ABI's status and its message (never biometric data).
package io.vouch

/**
 * Thrown when the library refuses a call. [status] is the `vouch_status` value of `include/vouch.h`
 * (constants below); the message says why, e.g. which option is wrong. HTTP errors (400, 401...)
 * are not exceptions: they are ordinary [Response]s, as from the cloud service.
 */
class VouchException(val status: Int, message: String) : RuntimeException(message) {
    /** The header's fixed description of [status]. */
    val statusText: String
        get() = Native.statusText(status)

    companion object {
        const val NULL_ARGUMENT = 1
        const val INVALID_UTF8 = 2
        const val INVALID_JSON = 3
        const val INVALID_OPTIONS = 4
        const val INVALID_ARGUMENT = 5
        const val NOT_FOUND = 6
        const val CONFLICT = 7
        const val AUTH_FAILED = 8
        const val FORBIDDEN = 9
        const val CONSENT_REQUIRED = 10
        const val TEMPLATE_UNREADABLE = 11
        const val STORAGE = 12
        const val MEDIA = 13
        const val NO_FACE = 14
        const val MODEL = 15
        const val NO_SPEECH = 16
        const val NO_DOCUMENT = 17
        const val CREDITS_EXHAUSTED = 18
        const val DAILY_LIMIT = 19
        const val PANIC = 100
    }
}
