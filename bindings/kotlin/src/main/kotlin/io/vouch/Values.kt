// The values the engine takes and gives: multipart parts, responses, templates, comparisons.
package io.vouch

/** One multipart part of a request, e.g. `Part("video", bytes, "clip.mp4", "video/mp4")`. */
class Part(
    val name: String,
    val data: ByteArray,
    val filename: String? = null,
    val contentType: String? = null
)

/** What the engine answered: the HTTP status, the JSON body and the headers, as the cloud service. */
class Response(val status: Int, val body: String, val headers: Map<String, String>) {
    /** One header's value, the name compared case-insensitively; null when absent. */
    fun header(name: String): String? =
        headers.entries.firstOrNull { it.key.equals(name, ignoreCase = true) }?.value
}

/** A face or voice template (opaque bytes to store or compare) and the quality report as JSON. */
class Template(val bytes: ByteArray, val infoJson: String)

/**
 * A comparison: [distance] (lower is more alike), the calibrated [probability] of the same person,
 * and [isMatch] at the default threshold (false-match rate 1e-3).
 */
class Match(val distance: Float, val probability: Float, val isMatch: Boolean)
