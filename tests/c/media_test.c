/*
 * media_test.c - exercises the media part of vouch's C ABI through include/vouch.h only:
 * vouch_clip_decode, vouch_audio_decode, vouch_clip_from_raw and the clip accessors.
 *
 * Usage: media_test <path of tests/media>. The expected values come from tests/media/README.md.
 * Every check prints "ok - ..." or "FAIL - ..."; the last line is "C ABI: N passed, M failed" and the
 * exit status is 1 when any check failed. JSON is checked with plain substring searches on purpose:
 * the library emits compact serde_json text ("key":"value", no spaces).
 *
 * Run by scripts/c-tests against the static library, the shared library and under ASan/UBSan.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "vouch.h"

/* 32 bytes 0x00..0x1f in base64: a valid template key. */
#define KEY32 "AAECAwQFBgcICQoLDA0ODxAREhMUFRYXGBkaGxwdHh8="

static int passed;
static int failed;
static const char *media_dir;

/* ---- small helpers ----------------------------------------------------------------------------- */

static bool check(bool ok, const char *format, ...) {
    va_list args;
    va_start(args, format);
    printf("%s - ", ok ? "ok" : "FAIL");
    vprintf(format, args);
    printf("\n");
    va_end(args);
    if (ok) {
        passed++;
    } else {
        failed++;
    }
    return ok;
}

static bool contains(const char *text, const char *needle) {
    return text != NULL && needle != NULL && strstr(text, needle) != NULL;
}

static const char *last_error(void) { return vouch_last_error_message(); }

/* Checks a failed call: its status and that the thread's last error message names the problem. */
static void check_failure(vouch_status got, vouch_status want, const char *needle, const char *what) {
    const char *message = last_error();
    check(got == want && message[0] != '\0' && contains(message, needle),
          "%s -> %s (%u, want %u; message \"%s\", want it to mention \"%s\")", what,
          vouch_status_text(want), (unsigned)got, (unsigned)want, message, needle);
}

/* Reads tests/media/<name> into a malloc'd buffer; NULL (after a FAIL) when it cannot. */
static uint8_t *read_media(const char *name, size_t *len) {
    char path[1024];
    snprintf(path, sizeof path, "%s/%s", media_dir, name);
    *len = 0;
    FILE *file = fopen(path, "rb");
    if (file == NULL) {
        check(false, "open %s", path);
        return NULL;
    }
    size_t capacity = 1 << 16;
    uint8_t *data = malloc(capacity);
    size_t used = 0;
    while (data != NULL) {
        used += fread(data + used, 1, capacity - used, file);
        if (used < capacity) {
            break;
        }
        capacity *= 2;
        uint8_t *bigger = realloc(data, capacity);
        if (bigger == NULL) {
            free(data);
        }
        data = bigger;
    }
    bool ok = data != NULL && !ferror(file) && used > 0;
    fclose(file);
    if (!check(ok, "read %s (%zu bytes)", path, used)) {
        free(data);
        return NULL;
    }
    *len = used;
    return data;
}

/* A sentinel that out-parameters must keep on failure. */
static char clip_sentinel;
#define UNTOUCHED_CLIP ((vouch_clip *)(void *)&clip_sentinel)

static const uint8_t *pixel(const vouch_rgb_frame *frame, uint32_t x, uint32_t y) {
    return frame->rgb + ((size_t)y * frame->width + x) * 3;
}

static bool is_red(const uint8_t *p) { return p[0] > 200 && p[1] < 60 && p[2] < 60; }
static bool is_blue(const uint8_t *p) { return p[0] < 60 && p[1] < 60 && p[2] > 200; }

static double mean_of(const vouch_rgb_frame *frame) {
    double sum = 0;
    for (size_t i = 0; i < frame->len; i++) {
        sum += frame->rgb[i];
    }
    return frame->len ? sum / (double)frame->len : 0;
}

/* RMS of samples [from, to) of a pcm, clamped to its length. */
static double rms(const vouch_pcm *pcm, size_t from, size_t to) {
    if (to > pcm->len) {
        to = pcm->len;
    }
    if (from >= to) {
        return -1;
    }
    double sum = 0;
    for (size_t i = from; i < to; i++) {
        sum += (double)pcm->samples[i] * pcm->samples[i];
    }
    return sqrt(sum / (double)(to - from));
}

static vouch_engine *open_engine(void) {
    vouch_engine *engine = NULL;
    vouch_status status =
        vouch_engine_new("{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\"}", &engine);
    check(status == VOUCH_STATUS_OK && engine != NULL, "vouch_engine_new (status %u: %s)",
          (unsigned)status, last_error());
    return engine;
}

/* Decodes tests/media/<name> with options; NULL after a FAIL. */
static vouch_clip *decode(const vouch_engine *engine, const char *name, const char *options) {
    size_t len;
    uint8_t *data = read_media(name, &len);
    if (data == NULL) {
        return NULL;
    }
    vouch_clip *clip = NULL;
    vouch_status status = vouch_clip_decode(engine, data, len, options, &clip);
    free(data);
    if (!check(status == VOUCH_STATUS_OK && clip != NULL,
               "vouch_clip_decode %s with %s (status %u: %s)", name, options ? options : "NULL",
               (unsigned)status, last_error())) {
        return NULL;
    }
    check(last_error()[0] == '\0', "%s: last error is \"\" after a successful call", name);
    return clip;
}

/* ---- vouch_clip_decode on the flash/beep clips --------------------------------------------------- */

struct clip_case {
    const char *name;
    const char *video_codec;
    const char *audio_codec;
    /* Presentation time of the white frame as the library reports it: the README's "flash pts",
       except that H.264 streams start at 0 as players show them (the fragmented MP4 has no edit
       list and starts at its 80 ms composition offset; the Matroska one at the 23 ms AAC
       priming). WebM/Matroska VP8/VP9 keep the 7 ms the muxer shifted them by. */
    int64_t flash_ms;
};

/* Checks the 50 frames of a flash/beep clip: size, timestamps, one white frame, the red square.
   Returns the timestamp of the white frame (-1 without one). */
static int64_t check_flash_frames(const vouch_clip *clip, const char *name, uint32_t want_w,
                               uint32_t want_h, int64_t flash_ms, bool rotated) {
    size_t count = vouch_clip_frame_count(clip);
    check(count == 50, "%s: 50 frames (got %zu)", name, count);
    size_t bad_size = 0, bad_order = 0, bad_red = 0, white = 0, white_index = 0;
    int64_t previous = INT64_MIN, white_ms = -1, first_ms = 0, last_ms = 0;
    for (size_t i = 0; i < count; i++) {
        vouch_rgb_frame frame;
        vouch_status status = vouch_clip_frame(clip, i, &frame);
        if (status != VOUCH_STATUS_OK || frame.rgb == NULL) {
            check(false, "%s: vouch_clip_frame %zu (status %u: %s)", name, i, (unsigned)status,
                  last_error());
            return -1;
        }
        if (frame.width != want_w || frame.height != want_h ||
            frame.len != (size_t)frame.width * frame.height * 3) {
            bad_size++;
            continue;
        }
        if (frame.timestamp_ms <= previous) {
            bad_order++;
        }
        previous = frame.timestamp_ms;
        if (i == 0) {
            first_ms = frame.timestamp_ms;
        }
        last_ms = frame.timestamp_ms;
        if (mean_of(&frame) > 200) {
            white++;
            white_index = i;
            white_ms = frame.timestamp_ms;
        } else {
            /* The red square: top-left, or top-right once a 90 degree rotation is applied; the
               opposite corner is black. */
            uint32_t red_x = rotated ? want_w - 5 : 4, other_x = rotated ? 4 : want_w - 5;
            if (!is_red(pixel(&frame, red_x, 4)) || pixel(&frame, other_x, 4)[0] > 60) {
                bad_red++;
            }
        }
    }
    check(bad_size == 0, "%s: every frame is %ux%u with len == w*h*3 (%zu are not)", name, want_w,
          want_h, bad_size);
    check(bad_order == 0, "%s: timestamps increase (%zu do not; %lld..%lld ms)", name, bad_order,
          (long long)first_ms, (long long)last_ms);
    check(last_ms - first_ms >= 1900 && last_ms - first_ms <= 2000,
          "%s: frames span about 1960 ms (%lld..%lld ms)", name, (long long)first_ms,
          (long long)last_ms);
    check(white == 1 && white_index == 25, "%s: exactly one white frame, index 25 (%zu, index %zu)",
          name, white, white_index);
    check(white_ms >= 0 && llabs(white_ms - flash_ms) <= 2,
          "%s: the flash is at %lld ms (want %lld +- 2)", name, (long long)white_ms,
          (long long)flash_ms);
    check(bad_red == 0, "%s: red square at the %s of every non-white frame (%zu without)", name,
          rotated ? "top-right" : "top-left", bad_red);
    return white_ms;
}

/* Checks about 2.0 s of 16 kHz audio with the 1 kHz beep from about 1.00 s to 1.20 s, starting
   within 25 ms of the flash (the README's allowance for container timestamp offsets). */
static void check_beep_audio(const vouch_clip *clip, const char *name, int64_t flash_ms) {
    vouch_pcm pcm;
    vouch_status status = vouch_clip_audio(clip, &pcm);
    if (!check(status == VOUCH_STATUS_OK && pcm.samples != NULL,
               "%s: vouch_clip_audio (status %u: %s)", name, (unsigned)status, last_error())) {
        return;
    }
    check(pcm.sample_rate == 16000, "%s: audio at 16000 Hz (got %u)", name, pcm.sample_rate);
    check(pcm.len >= 30400 && pcm.len <= 33600, "%s: about 2.0 s of audio (%zu samples)", name,
          pcm.len);
    /* The beep (amplitude 0.5, RMS 0.354) from 1.00-1.20 s, give or take the 25 ms container
       offsets: measure 1.04-1.16 s; silence at 0.2-0.8 s and 1.4-1.9 s. */
    double beep = rms(&pcm, 16640, 18560);
    double before = rms(&pcm, 3200, 12800);
    double after = rms(&pcm, 22400, 30400);
    check(beep > 0.3 && beep < 0.4 && before >= 0 && before < 0.01 && after >= 0 && after < 0.01,
          "%s: beep RMS %.3f at 1.04-1.16 s (want ~0.354), silence %.4f before and %.4f after", name,
          beep, before, after);
    size_t onset = 0;
    while (onset < pcm.len && fabsf(pcm.samples[onset]) < 0.1f) {
        onset++;
    }
    int64_t onset_ms = pcm.start_ms + (int64_t)(onset * 1000 / 16000);
    check(onset < pcm.len && llabs(onset_ms - flash_ms) <= 25,
          "%s: the beep starts at %lld ms, within 25 ms of the flash at %lld ms (audio from %lld ms)",
          name, (long long)onset_ms, (long long)flash_ms, (long long)pcm.start_ms);
}

static void test_clip_decode(const vouch_engine *engine) {
    const struct clip_case cases[] = {
        {"h264_aac.mp4", "H.264", "AAC", 1000},
        {"h264_aac.mov", "H.264", "AAC", 1000},
        {"h264_aac_fragmented.mp4", "H.264", "AAC", 1000},
        {"h264_baseline_aac.mp4", "H.264", "AAC", 1000},
        {"vp8_opus.webm", "VP8", "Opus", 1007},
        {"vp9_opus.webm", "VP9", "Opus", 1007},
        {"vp8_opus_live.webm", "VP8", "Opus", 1007},
        {"vp9_opus.mkv", "VP9", "Opus", 1007},
        {"h264_aac.mkv", "H.264", "AAC", 1000},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct clip_case *c = &cases[i];
        vouch_clip *clip = decode(engine, c->name, "{\"sampler\":\"all\"}");
        if (clip == NULL) {
            continue;
        }
        int64_t flash = check_flash_frames(clip, c->name, 320, 240, c->flash_ms, false);
        check_beep_audio(clip, c->name, flash);
        const char *info = vouch_clip_info_json(clip);
        char video[64], audio[64];
        snprintf(video, sizeof video, "\"video_codec\":\"%s\"", c->video_codec);
        snprintf(audio, sizeof audio, "\"audio_codec\":\"%s\"", c->audio_codec);
        check(contains(info, video) && contains(info, audio) && contains(info, "\"frames\":50") &&
                  contains(info, "\"coded_width\":320") &&
                  contains(info, "\"coded_height\":240") && contains(info, "\"has_audio\":true") &&
                  contains(info, "\"rotation_degrees\":0"),
              "%s: info %s names %s and %s", c->name, info ? info : "(null)", c->video_codec,
              c->audio_codec);
        vouch_clip_free(clip);
    }

    /* iPhone portrait: rotated upright, red square at the top-right. */
    vouch_clip *clip = decode(engine, "h264_aac_rotated90.mp4", "{\"sampler\":\"all\"}");
    if (clip != NULL) {
        int64_t flash = check_flash_frames(clip, "h264_aac_rotated90.mp4", 240, 320, 1000, true);
        check_beep_audio(clip, "h264_aac_rotated90.mp4", flash);
        const char *info = vouch_clip_info_json(clip);
        check(contains(info, "\"rotation_degrees\":90") && contains(info, "\"coded_width\":320"),
              "h264_aac_rotated90.mp4: info %s has rotation 90, coded 320 wide",
              info ? info : "(null)");
        vouch_clip_free(clip);
    }

    /* Video only. */
    clip = decode(engine, "h264_noaudio.mp4", "{\"sampler\":\"all\"}");
    if (clip != NULL) {
        check_flash_frames(clip, "h264_noaudio.mp4", 320, 240, 1000, false);
        vouch_pcm pcm;
        memset(&pcm, 0xab, sizeof pcm);
        vouch_pcm before = pcm;
        vouch_status status = vouch_clip_audio(clip, &pcm);
        check_failure(status, VOUCH_STATUS_NOT_FOUND, "no audio", "h264_noaudio.mp4: vouch_clip_audio");
        check(memcmp(&pcm, &before, sizeof pcm) == 0, "h264_noaudio.mp4: out_pcm untouched");
        const char *info = vouch_clip_info_json(clip);
        check(contains(info, "\"has_audio\":false") && contains(info, "\"audio_codec\":null"),
              "h264_noaudio.mp4: info %s says no audio", info ? info : "(null)");
        vouch_clip_free(clip);
    }
}

/* ---- samplers and options ---------------------------------------------------------------------- */

static void test_samplers(const vouch_engine *engine) {
    struct {
        const char *options;
        size_t want;
        int64_t min_gap_ms; /* smallest distance between kept frames */
    } cases[] = {
        {"{\"sampler\":{\"evenly\":5}}", 5, 480}, /* frames 0, 12, 25, 37, 49 */
        {"{\"sampler\":{\"max_fps\":5}}", 10, 200},
        {"{\"sampler\":\"all\",\"audio\":false}", 50, 40},
        /* Default: at most 10 frames per second, kept greedily at least 100 ms apart: from 25 fps
           that is every third frame (120 ms), so 17 frames, not 20. */
        {NULL, 17, 120},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const char *options = cases[i].options ? cases[i].options : "NULL";
        vouch_clip *clip = decode(engine, "h264_aac.mp4", cases[i].options);
        if (clip == NULL) {
            continue;
        }
        size_t count = vouch_clip_frame_count(clip);
        check(count == cases[i].want, "h264_aac.mp4 with %s: %zu frames (got %zu)", options,
              cases[i].want, count);
        int64_t previous = INT64_MIN, min_gap = INT64_MAX;
        bool increasing = true;
        for (size_t f = 0; f < count; f++) {
            vouch_rgb_frame frame;
            if (vouch_clip_frame(clip, f, &frame) != VOUCH_STATUS_OK ||
                frame.timestamp_ms <= previous || frame.width != 320 || frame.height != 240) {
                increasing = false;
                break;
            }
            if (f > 0 && frame.timestamp_ms - previous < min_gap) {
                min_gap = frame.timestamp_ms - previous;
            }
            previous = frame.timestamp_ms;
        }
        check(increasing && min_gap == cases[i].min_gap_ms,
              "h264_aac.mp4 with %s: 320x240 frames, timestamps increase, at least %lld ms apart "
              "(smallest gap %lld ms)",
              options, (long long)cases[i].min_gap_ms, (long long)min_gap);
        vouch_pcm pcm;
        vouch_status status = vouch_clip_audio(clip, &pcm);
        if (cases[i].options != NULL && contains(cases[i].options, "\"audio\":false")) {
            check(status == VOUCH_STATUS_NOT_FOUND, "h264_aac.mp4 with %s: no audio (status %u)",
                  options, (unsigned)status);
        } else {
            check(status == VOUCH_STATUS_OK && pcm.len >= 30400 && pcm.len <= 33600,
                  "h264_aac.mp4 with %s: about 2.0 s of audio (status %u, %zu samples)", options,
                  (unsigned)status, status == VOUCH_STATUS_OK ? pcm.len : (size_t)0);
        }
        vouch_clip_free(clip);
    }

    /* The evenly-5 frames are spread over the clip and still show the red square. */
    vouch_clip *clip = decode(engine, "h264_aac.mp4", "{\"sampler\":{\"evenly\":5}}");
    if (clip != NULL) {
        vouch_rgb_frame first, last;
        if (vouch_clip_frame(clip, 0, &first) == VOUCH_STATUS_OK &&
            vouch_clip_frame(clip, 4, &last) == VOUCH_STATUS_OK) {
            check(first.timestamp_ms < 100 && last.timestamp_ms > 1800 &&
                      is_red(pixel(&first, 4, 4)) && is_red(pixel(&last, 4, 4)),
                  "evenly 5: spread from %lld to %lld ms, red square kept", (long long)first.timestamp_ms,
                  (long long)last.timestamp_ms);
        } else {
            check(false, "evenly 5: frames 0 and 4 readable (%s)", last_error());
        }
        vouch_clip_free(clip);
    }

    size_t len;
    uint8_t *data = read_media("h264_aac.mp4", &len);
    if (data == NULL) {
        return;
    }
    struct {
        const char *options;
        vouch_status want;
        const char *needle;
    } bad[] = {
        {"{\"sampler\":\"all\",\"frames\":3}", VOUCH_STATUS_INVALID_JSON, "unknown field `frames`"},
        {"{\"sampler\":{\"every\":3}}", VOUCH_STATUS_INVALID_JSON, "options_json"},
        {"{\"sampler\":\"some\"}", VOUCH_STATUS_INVALID_JSON, "options_json"},
        {"not json", VOUCH_STATUS_INVALID_JSON, "options_json"},
        {"{\"sampler\":{\"max_fps\":0}}", VOUCH_STATUS_INVALID_ARGUMENT, "max_fps must be above 0"},
        {"{\"sampler\":{\"max_fps\":-2.5}}", VOUCH_STATUS_INVALID_ARGUMENT, "max_fps"},
        {"{\"sampler\":\"\xff\"}", VOUCH_STATUS_INVALID_UTF8, "options_json"},
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        vouch_clip *out = UNTOUCHED_CLIP;
        char what[160];
        snprintf(what, sizeof what, "vouch_clip_decode with options %s", bad[i].options);
        check_failure(vouch_clip_decode(engine, data, len, bad[i].options, &out), bad[i].want,
                      bad[i].needle, what);
        check(out == UNTOUCHED_CLIP, "%s: out_clip untouched", what);
    }
    free(data);
}

/* ---- vouch_audio_decode ------------------------------------------------------------------------ */

static void test_audio_decode(const vouch_engine *engine) {
    const char *names[] = {"tone.wav",  "tone.flac", "tone_opus.ogg", "tone_vorbis.ogg",
                           "tone.m4a", "tone_opus.webm"};
    const char *codecs[] = {"PCM", "FLAC", "Opus", "Vorbis", "AAC", "Opus"};
    for (size_t i = 0; i < sizeof names / sizeof names[0]; i++) {
        size_t len;
        uint8_t *data = read_media(names[i], &len);
        if (data == NULL) {
            continue;
        }
        vouch_clip *clip = NULL;
        vouch_status status = vouch_audio_decode(engine, data, len, &clip);
        free(data);
        if (!check(status == VOUCH_STATUS_OK && clip != NULL, "vouch_audio_decode %s (status %u: %s)",
                   names[i], (unsigned)status, last_error())) {
            continue;
        }
        check(vouch_clip_frame_count(clip) == 0, "%s: 0 frames (got %zu)", names[i],
              vouch_clip_frame_count(clip));
        vouch_rgb_frame frame;
        check_failure(vouch_clip_frame(clip, 0, &frame), VOUCH_STATUS_NOT_FOUND, "frame 0",
                      "vouch_clip_frame 0 of an audio clip");
        vouch_pcm pcm;
        status = vouch_clip_audio(clip, &pcm);
        if (check(status == VOUCH_STATUS_OK && pcm.samples != NULL,
                  "%s: vouch_clip_audio (status %u: %s)", names[i], (unsigned)status, last_error())) {
            check(pcm.sample_rate == 16000 && pcm.len >= 15700 && pcm.len <= 16300,
                  "%s: about 16000 samples at 16000 Hz (%zu at %u)", names[i], pcm.len,
                  pcm.sample_rate);
            /* A 1 kHz sine of RMS 0.354 for 0-0.5 s, then silence. */
            double tone = rms(&pcm, 1600, 6400), silence = rms(&pcm, 9600, 15000);
            check(tone > 0.3 && tone < 0.4 && silence >= 0 && silence < 0.01,
                  "%s: tone RMS %.3f at 0.1-0.4 s (want ~0.354), silence %.4f at 0.6-0.94 s",
                  names[i], tone, silence);
        }
        const char *info = vouch_clip_info_json(clip);
        char codec[64];
        snprintf(codec, sizeof codec, "\"audio_codec\":\"%s\"", codecs[i]);
        check(contains(info, codec) && contains(info, "\"video_codec\":null") &&
                  contains(info, "\"has_audio\":true"),
              "%s: info %s names %s", names[i], info ? info : "(null)", codecs[i]);
        vouch_clip_free(clip);
    }

    /* A video's audio track. */
    size_t len;
    uint8_t *data = read_media("vp8_opus.webm", &len);
    if (data != NULL) {
        vouch_clip *clip = NULL;
        vouch_status status = vouch_audio_decode(engine, data, len, &clip);
        vouch_pcm pcm;
        check(status == VOUCH_STATUS_OK && vouch_clip_frame_count(clip) == 0 &&
                  vouch_clip_audio(clip, &pcm) == VOUCH_STATUS_OK && pcm.len >= 30400 &&
                  pcm.len <= 33600,
              "vouch_audio_decode of vp8_opus.webm: no frames, about 2.0 s of audio (status %u: %s)",
              (unsigned)status, last_error());
        vouch_clip_free(clip);
        free(data);
    }
}

/* ---- decode errors ----------------------------------------------------------------------------- */

static void test_decode_errors(const vouch_engine *engine) {
    static const char text[] = "this is not a video, just some text bytes\n";
    size_t mp4_len, hevc_len;
    uint8_t *mp4 = read_media("h264_aac.mp4", &mp4_len);
    uint8_t *hevc = read_media("hevc_aac.mp4", &hevc_len);
    if (mp4 == NULL || hevc == NULL) {
        free(mp4);
        free(hevc);
        return;
    }
    struct {
        const uint8_t *data;
        size_t len;
        const char *needle_video;
        const char *needle_audio;
        const char *what;
    } cases[] = {
        {NULL, 0, "empty", "empty", "an empty buffer (NULL, 0)"},
        {(const uint8_t *)text, sizeof text - 1, "unrecognised", "unrecognised", "text bytes"},
        {mp4, 100, "truncated", "truncated", "h264_aac.mp4 cut to 100 bytes"},
        {mp4, mp4_len / 2, "truncated", "truncated", "h264_aac.mp4 cut in half"},
        {hevc, hevc_len, "hevc", NULL, "hevc_aac.mp4"},
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        char what[160];
        vouch_clip *out = UNTOUCHED_CLIP;
        snprintf(what, sizeof what, "vouch_clip_decode of %s", cases[i].what);
        check_failure(vouch_clip_decode(engine, cases[i].data, cases[i].len, "{\"sampler\":\"all\"}",
                                        &out),
                      VOUCH_STATUS_MEDIA, cases[i].needle_video, what);
        check(out == UNTOUCHED_CLIP, "%s: out_clip untouched", what);
        if (cases[i].needle_audio == NULL) {
            continue;
        }
        out = UNTOUCHED_CLIP;
        snprintf(what, sizeof what, "vouch_audio_decode of %s", cases[i].what);
        check_failure(vouch_audio_decode(engine, cases[i].data, cases[i].len, &out),
                      VOUCH_STATUS_MEDIA, cases[i].needle_audio, what);
        check(out == UNTOUCHED_CLIP, "%s: out_clip untouched", what);
    }
    /* The HEVC message names the cargo feature that would add it. */
    vouch_clip *out = UNTOUCHED_CLIP;
    vouch_status status = vouch_clip_decode(engine, hevc, hevc_len, NULL, &out);
    check_failure(status, VOUCH_STATUS_MEDIA, "HEVC", "hevc_aac.mp4 names the codec");
    check_failure(status, VOUCH_STATUS_MEDIA, "feature \"hevc\"", "hevc_aac.mp4 names the feature");

    /* The decompression bomb (30 s of 4096x4096 in 227 KB) with default options: refused before
       decoding, where it used to allocate until the process aborted. */
    size_t bomb_len;
    uint8_t *bomb = read_media("bomb_4096.mp4", &bomb_len);
    if (bomb != NULL) {
        out = UNTOUCHED_CLIP;
        check_failure(vouch_clip_decode(engine, bomb, bomb_len, NULL, &out), VOUCH_STATUS_MEDIA,
                      "picture size in pixels is 16777216, over the limit of 9437184",
                      "vouch_clip_decode of bomb_4096.mp4");
        check(out == UNTOUCHED_CLIP, "bomb: out_clip untouched");
        free(bomb);
    }

    /* NULL arguments. */
    out = UNTOUCHED_CLIP;
    check_failure(vouch_clip_decode(NULL, mp4, mp4_len, NULL, &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "engine", "vouch_clip_decode with a NULL engine");
    check(out == UNTOUCHED_CLIP, "NULL engine: out_clip untouched");
    check_failure(vouch_clip_decode(engine, mp4, mp4_len, NULL, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_clip", "vouch_clip_decode with a NULL out_clip");
    check_failure(vouch_clip_decode(engine, NULL, 10, NULL, &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "data", "vouch_clip_decode with NULL data of length 10");
    check(out == UNTOUCHED_CLIP, "NULL data: out_clip untouched");
    check_failure(vouch_audio_decode(NULL, mp4, mp4_len, &out), VOUCH_STATUS_NULL_ARGUMENT,
                  "engine", "vouch_audio_decode with a NULL engine");
    check_failure(vouch_audio_decode(engine, mp4, mp4_len, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_clip", "vouch_audio_decode with a NULL out_clip");
    check_failure(vouch_audio_decode(engine, NULL, 10, &out), VOUCH_STATUS_NULL_ARGUMENT, "data",
                  "vouch_audio_decode with NULL data of length 10");
    check(out == UNTOUCHED_CLIP, "vouch_audio_decode failures: out_clip untouched");

    /* Accessors: range, NULL clip, NULL out. */
    vouch_clip *clip = decode(engine, "h264_aac.mp4", "{\"sampler\":{\"evenly\":3}}");
    if (clip != NULL) {
        vouch_rgb_frame frame;
        memset(&frame, 0xcd, sizeof frame);
        vouch_rgb_frame before = frame;
        check_failure(vouch_clip_frame(clip, 3, &frame), VOUCH_STATUS_NOT_FOUND,
                      "frame 3 does not exist; the clip has 3", "vouch_clip_frame 3 of 3");
        check_failure(vouch_clip_frame(clip, (size_t)-1, &frame), VOUCH_STATUS_NOT_FOUND,
                      "does not exist", "vouch_clip_frame SIZE_MAX");
        check(memcmp(&frame, &before, sizeof frame) == 0, "vouch_clip_frame: out_frame untouched");
        check_failure(vouch_clip_frame(clip, 0, NULL), VOUCH_STATUS_NULL_ARGUMENT, "out_frame",
                      "vouch_clip_frame with a NULL out_frame");
        check_failure(vouch_clip_frame(NULL, 0, &frame), VOUCH_STATUS_NULL_ARGUMENT, "clip",
                      "vouch_clip_frame of a NULL clip");
        vouch_pcm pcm;
        check_failure(vouch_clip_audio(clip, NULL), VOUCH_STATUS_NULL_ARGUMENT, "out_pcm",
                      "vouch_clip_audio with a NULL out_pcm");
        check_failure(vouch_clip_audio(NULL, &pcm), VOUCH_STATUS_NULL_ARGUMENT, "clip",
                      "vouch_clip_audio of a NULL clip");
        /* The borrowed pixels are still readable after other calls on the clip. */
        vouch_rgb_frame kept;
        if (vouch_clip_frame(clip, 0, &kept) == VOUCH_STATUS_OK) {
            check(vouch_clip_frame(clip, 2, &frame) == VOUCH_STATUS_OK && is_red(pixel(&kept, 4, 4)),
                  "borrowed frame 0 stays valid while the clip lives");
        }
        vouch_clip_free(clip);
    }
    check(vouch_clip_frame_count(NULL) == 0, "vouch_clip_frame_count(NULL) is 0");
    check(vouch_clip_info_json(NULL) == NULL, "vouch_clip_info_json(NULL) is NULL");
    vouch_clip_free(NULL);
    check(true, "vouch_clip_free(NULL) is a no-op");
    free(mp4);
    free(hevc);
}

/* ---- vouch_clip_from_raw ----------------------------------------------------------------------- */

#define RAW_W 64
#define RAW_H 48
#define CHROMA_W (RAW_W / 2)
#define CHROMA_H (RAW_H / 2)

/* BT.601 full range: red is Y 76 U 85 V 255, blue Y 29 U 255 V 107. */
static uint8_t bgra[RAW_W * RAW_H * 4];
static uint8_t luma[RAW_W * RAW_H];
static uint8_t chroma_uv[CHROMA_W * 2 * CHROMA_H]; /* interleaved U,V (NV12; Android I420) */

static void fill_raw_pictures(void) {
    for (int y = 0; y < RAW_H; y++) {
        for (int x = 0; x < RAW_W; x++) {
            bool red = x < RAW_W / 2;
            uint8_t *p = &bgra[(y * RAW_W + x) * 4];
            p[0] = red ? 0 : 255; /* B */
            p[1] = 0;             /* G */
            p[2] = red ? 255 : 0; /* R */
            p[3] = 255;           /* A */
            luma[y * RAW_W + x] = red ? 76 : 29;
        }
    }
    for (int y = 0; y < CHROMA_H; y++) {
        for (int x = 0; x < CHROMA_W; x++) {
            bool red = x < CHROMA_W / 2;
            chroma_uv[y * RAW_W + 2 * x] = red ? 85 : 255;      /* U */
            chroma_uv[y * RAW_W + 2 * x + 1] = red ? 255 : 107; /* V */
        }
    }
}

static vouch_plane plane(const uint8_t *data, size_t len, size_t row_stride, size_t pixel_stride) {
    vouch_plane p;
    p.data = data;
    p.len = len;
    p.row_stride = row_stride;
    p.pixel_stride = pixel_stride;
    return p;
}

static vouch_frame bgra_frame(int64_t timestamp_ms) {
    vouch_frame frame;
    memset(&frame, 0, sizeof frame);
    frame.format = VOUCH_PIXEL_FORMAT_BGRA;
    frame.width = RAW_W;
    frame.height = RAW_H;
    frame.planes[0] = plane(bgra, sizeof bgra, RAW_W * 4, 4);
    frame.n_planes = 1;
    frame.timestamp_ms = timestamp_ms;
    return frame;
}

static vouch_frame nv12_frame(int64_t timestamp_ms) {
    vouch_frame frame;
    memset(&frame, 0, sizeof frame);
    frame.format = VOUCH_PIXEL_FORMAT_NV12;
    frame.width = RAW_W;
    frame.height = RAW_H;
    frame.planes[0] = plane(luma, sizeof luma, RAW_W, 1);
    frame.planes[1] = plane(chroma_uv, sizeof chroma_uv, RAW_W, 2);
    frame.n_planes = 2;
    frame.limited_range = 0;
    frame.timestamp_ms = timestamp_ms;
    return frame;
}

/* Android YUV_420_888 as I420: U and V point into one interleaved buffer, pixel stride 2. */
static vouch_frame android_i420_frame(int64_t timestamp_ms, uint32_t rotation) {
    vouch_frame frame;
    memset(&frame, 0, sizeof frame);
    frame.format = VOUCH_PIXEL_FORMAT_I420;
    frame.width = RAW_W;
    frame.height = RAW_H;
    frame.planes[0] = plane(luma, sizeof luma, RAW_W, 1);
    frame.planes[1] = plane(chroma_uv, sizeof chroma_uv, RAW_W, 2);
    frame.planes[2] = plane(chroma_uv + 1, sizeof chroma_uv - 1, RAW_W, 2);
    frame.n_planes = 3;
    frame.rotation_degrees = rotation;
    frame.limited_range = 0;
    frame.timestamp_ms = timestamp_ms;
    return frame;
}

/* Checks a converted frame: size, timestamp, and where red and blue are. */
static void check_raw_frame(const vouch_clip *clip, size_t index, const char *what, bool rotated,
                            int64_t timestamp_ms) {
    vouch_rgb_frame frame;
    vouch_status status = vouch_clip_frame(clip, index, &frame);
    if (!check(status == VOUCH_STATUS_OK, "raw frame %zu (%s) readable (status %u: %s)", index,
               what, (unsigned)status, last_error())) {
        return;
    }
    uint32_t want_w = rotated ? RAW_H : RAW_W, want_h = rotated ? RAW_W : RAW_H;
    check(frame.width == want_w && frame.height == want_h &&
              frame.len == (size_t)want_w * want_h * 3 && frame.timestamp_ms == timestamp_ms,
          "raw frame %zu (%s): %ux%u at %lld ms (want %ux%u at %lld ms)", index, what, frame.width,
          frame.height, (long long)frame.timestamp_ms, want_w, want_h, (long long)timestamp_ms);
    if (frame.width != want_w || frame.height != want_h) {
        return;
    }
    /* Red on the left (on top once rotated 90 clockwise), blue on the other side; every pixel. */
    size_t wrong = 0;
    for (uint32_t y = 0; y < frame.height; y++) {
        for (uint32_t x = 0; x < frame.width; x++) {
            bool red = rotated ? y < frame.height / 2 : x < frame.width / 2;
            const uint8_t *p = pixel(&frame, x, y);
            wrong += red ? !is_red(p) : !is_blue(p);
        }
    }
    const uint8_t *a = pixel(&frame, 2, 2);
    const uint8_t *b = pixel(&frame, frame.width - 3, frame.height - 3);
    check(wrong == 0,
          "raw frame %zu (%s): red %s, blue %s (%zu wrong pixels; (2,2) = %u,%u,%u, far corner = "
          "%u,%u,%u)",
          index, what, rotated ? "on top" : "on the left", rotated ? "below" : "on the right",
          wrong, a[0], a[1], a[2], b[0], b[1], b[2]);
}

static void test_from_raw(const vouch_engine *engine) {
    fill_raw_pictures();

    /* 1 s of a 440 Hz sine (amplitude 0.5) in s16 stereo at 48 kHz. */
    enum { RATE = 48000 };
    int16_t *samples = malloc(sizeof(int16_t) * RATE * 2);
    if (!check(samples != NULL, "allocate audio")) {
        return;
    }
    const double pi = 3.14159265358979323846;
    for (int i = 0; i < RATE; i++) {
        int16_t value = (int16_t)lround(16384.0 * sin(2 * pi * 440.0 * i / RATE));
        samples[2 * i] = value;
        samples[2 * i + 1] = value;
    }
    vouch_audio audio;
    memset(&audio, 0, sizeof audio);
    audio.data = (const uint8_t *)samples;
    audio.len = sizeof(int16_t) * RATE * 2;
    audio.sample_format = VOUCH_SAMPLE_FORMAT_S16;
    audio.sample_rate = RATE;
    audio.channels = 2;
    audio.timestamp_ms = 5;

    /* Out of order on purpose: the clip sorts by timestamp. */
    vouch_frame frames[3];
    frames[0] = bgra_frame(66);
    frames[1] = nv12_frame(0);
    frames[2] = android_i420_frame(33, 90);
    vouch_clip *clip = UNTOUCHED_CLIP;
    vouch_status status = vouch_clip_from_raw(engine, frames, 3, &audio, &clip);
    if (check(status == VOUCH_STATUS_OK && clip != NULL && clip != UNTOUCHED_CLIP,
              "vouch_clip_from_raw with BGRA, NV12, I420 (pixel stride 2) and s16 stereo audio "
              "(status %u: %s)",
              (unsigned)status, last_error())) {
        check(vouch_clip_frame_count(clip) == 3, "raw clip has 3 frames (got %zu)",
              vouch_clip_frame_count(clip));
        check_raw_frame(clip, 0, "NV12", false, 0);
        check_raw_frame(clip, 1, "I420 pixel stride 2, rotation 90", true, 33);
        check_raw_frame(clip, 2, "BGRA", false, 66);
        vouch_pcm pcm;
        status = vouch_clip_audio(clip, &pcm);
        if (check(status == VOUCH_STATUS_OK, "raw clip audio (status %u: %s)", (unsigned)status,
                  last_error())) {
            double level = rms(&pcm, 800, 15200);
            check(pcm.sample_rate == 16000 && pcm.len >= 15900 && pcm.len <= 16100 &&
                      pcm.start_ms == 5 && level > 0.33 && level < 0.38,
                  "raw audio: %zu samples at %u Hz from %lld ms, RMS %.3f (want ~16000 at 16000 "
                  "from 5, ~0.354)",
                  pcm.len, pcm.sample_rate, (long long)pcm.start_ms, level);
        }
        const char *info = vouch_clip_info_json(clip);
        check(contains(info, "\"frames\":3") && contains(info, "\"has_audio\":true"),
              "raw clip info %s", info ? info : "(null)");
        vouch_clip_free(clip);
    }

    /* Each format alone, with rotation 90 on BGRA and NV12 too. */
    vouch_frame rotated[2] = {bgra_frame(10), nv12_frame(20)};
    rotated[0].rotation_degrees = 90;
    rotated[1].rotation_degrees = 90;
    clip = NULL;
    status = vouch_clip_from_raw(engine, rotated, 2, NULL, &clip);
    if (check(status == VOUCH_STATUS_OK && clip != NULL,
              "vouch_clip_from_raw with rotated BGRA and NV12, no audio (status %u: %s)",
              (unsigned)status, last_error())) {
        check_raw_frame(clip, 0, "BGRA rotation 90", true, 10);
        check_raw_frame(clip, 1, "NV12 rotation 90", true, 20);
        vouch_pcm pcm;
        check(vouch_clip_audio(clip, &pcm) == VOUCH_STATUS_NOT_FOUND,
              "raw clip without audio: vouch_clip_audio -> NOT_FOUND");
        vouch_clip_free(clip);
    }

    /* Audio only, no frames (frames NULL with n_frames 0). */
    clip = NULL;
    status = vouch_clip_from_raw(engine, NULL, 0, &audio, &clip);
    check(status == VOUCH_STATUS_OK && vouch_clip_frame_count(clip) == 0,
          "vouch_clip_from_raw(NULL, 0 frames, audio) gives a clip without frames (status %u: %s)",
          (unsigned)status, last_error());
    vouch_clip_free(clip);

    /* Rejected input; out_clip untouched every time. */
    struct {
        vouch_frame frame;
        vouch_status want;
        const char *needle;
        const char *what;
    } bad[11];
    size_t n = 0;
    bad[n].frame = bgra_frame(0);
    bad[n].frame.format = 99;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "unknown pixel format 99";
    bad[n++].what = "pixel format 99";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.rotation_degrees = 45;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "rotation_degrees 45";
    bad[n++].what = "rotation 45";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.rotation_degrees = 360;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "rotation_degrees 360";
    bad[n++].what = "rotation 360 (only 0, 90, 180 and 270 are documented)";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.planes[0].row_stride = SIZE_MAX;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "stride";
    bad[n++].what = "a row stride of SIZE_MAX (row_stride * (rows - 1) wrapped)";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.n_planes = 4;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "n_planes 4";
    bad[n++].what = "n_planes 4";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.planes[0].data = NULL;
    bad[n].want = VOUCH_STATUS_NULL_ARGUMENT;
    bad[n].needle = "frames[1].planes[0].data";
    bad[n++].what = "a NULL plane with a length";
    /* Plane too short, wrong plane count, strides too small, size 0: the frame reaches the
       converter, which rejects it as invalid raw input (VOUCH_STATUS_INVALID_ARGUMENT). */
    bad[n].frame = bgra_frame(0);
    bad[n].frame.planes[0].len = sizeof bgra - 1;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "needs 12288";
    bad[n++].what = "a BGRA plane one byte short";
    bad[n].frame = android_i420_frame(0, 0);
    bad[n].frame.planes[2].len = sizeof chroma_uv - 2;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "V plane";
    bad[n++].what = "an I420 V plane one byte short";
    bad[n].frame = nv12_frame(0);
    bad[n].frame.n_planes = 1;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "needs 2 planes";
    bad[n++].what = "NV12 with one plane";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.planes[0].row_stride = RAW_W * 4 - 4;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "too small";
    bad[n++].what = "a BGRA row stride too small";
    bad[n].frame = bgra_frame(0);
    bad[n].frame.width = 0;
    bad[n].want = VOUCH_STATUS_INVALID_ARGUMENT;
    bad[n].needle = "frame size";
    bad[n++].what = "width 0";
    for (size_t i = 0; i < n; i++) {
        /* A good frame first: the bad one is the second, and the message names frames[1] where
           the FFI layer checks it. */
        vouch_frame pair[2] = {nv12_frame(0), bad[i].frame};
        clip = UNTOUCHED_CLIP;
        char what[160];
        snprintf(what, sizeof what, "vouch_clip_from_raw with %s", bad[i].what);
        status = vouch_clip_from_raw(engine, pair, 2, NULL, &clip);
        check_failure(status, bad[i].want, bad[i].needle, what);
        check(clip == UNTOUCHED_CLIP, "%s: out_clip untouched", what);
    }

    clip = UNTOUCHED_CLIP;
    check_failure(vouch_clip_from_raw(engine, NULL, 2, NULL, &clip), VOUCH_STATUS_NULL_ARGUMENT,
                  "frames", "vouch_clip_from_raw with NULL frames and n_frames 2");
    check_failure(vouch_clip_from_raw(NULL, frames, 1, NULL, &clip), VOUCH_STATUS_NULL_ARGUMENT,
                  "engine", "vouch_clip_from_raw with a NULL engine");
    check_failure(vouch_clip_from_raw(engine, frames, 1, NULL, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "out_clip", "vouch_clip_from_raw with a NULL out_clip");
    check_failure(vouch_clip_from_raw(engine, NULL, 1001, NULL, &clip),
                  VOUCH_STATUS_INVALID_ARGUMENT, "at most 1000", "vouch_clip_from_raw with 1001 frames");
    /* 200 frames of 1024x1024 (one buffer shared by all) would be 629 MB of RGB: refused before
       any is converted. */
    {
        size_t side = 1024, count = 200;
        uint8_t *big = calloc(side * side * 4, 1);
        vouch_frame *many = calloc(count, sizeof *many);
        check(big != NULL && many != NULL, "allocated the big frames");
        if (big != NULL && many != NULL) {
            for (size_t i = 0; i < count; i++) {
                many[i] = bgra_frame((int64_t)i * 40);
                many[i].width = (uint32_t)side;
                many[i].height = (uint32_t)side;
                many[i].planes[0] = plane(big, side * side * 4, side * 4, 4);
            }
            check_failure(vouch_clip_from_raw(engine, many, count, NULL, &clip), VOUCH_STATUS_MEDIA,
                          "bytes of frames is 629145600, over the limit of 536870912",
                          "vouch_clip_from_raw with 629 MB of frames");
        }
        free(big);
        free(many);
    }
    vouch_audio bad_audio = audio;
    bad_audio.sample_format = 7;
    check_failure(vouch_clip_from_raw(engine, frames, 1, &bad_audio, &clip),
                  VOUCH_STATUS_INVALID_ARGUMENT, "unknown sample format 7",
                  "vouch_clip_from_raw with sample format 7");
    bad_audio = audio;
    bad_audio.data = NULL;
    check_failure(vouch_clip_from_raw(engine, frames, 1, &bad_audio, &clip),
                  VOUCH_STATUS_NULL_ARGUMENT, "audio.data", "vouch_clip_from_raw with NULL audio data");
    bad_audio = audio;
    bad_audio.len = audio.len - 1;
    check_failure(vouch_clip_from_raw(engine, frames, 1, &bad_audio, &clip), VOUCH_STATUS_INVALID_ARGUMENT,
                  "odd number of bytes", "vouch_clip_from_raw with an odd s16 byte count");
    bad_audio = audio;
    bad_audio.sample_rate = 1000;
    check_failure(vouch_clip_from_raw(engine, frames, 1, &bad_audio, &clip), VOUCH_STATUS_INVALID_ARGUMENT,
                  "1000 Hz", "vouch_clip_from_raw with audio at 1000 Hz");
    check(clip == UNTOUCHED_CLIP, "vouch_clip_from_raw failures: out_clip untouched");
    free(samples);
}

/* ---- main -------------------------------------------------------------------------------------- */

int main(int argc, char **argv) {
    setvbuf(stdout, NULL, _IOLBF, 0);
    if (argc != 2) {
        fprintf(stderr, "usage: %s <path of tests/media>\n", argv[0]);
        return 2;
    }
    media_dir = argv[1];

    vouch_engine *engine = open_engine();
    if (engine != NULL) {
        test_clip_decode(engine);
        test_samplers(engine);
        test_audio_decode(engine);
        test_decode_errors(engine);
        test_from_raw(engine);
    }
    vouch_engine_free(engine);

    printf("C ABI: %d passed, %d failed\n", passed, failed);
    return failed == 0 ? 0 : 1;
}
