/*
 * jobs_test.c - the job pump through the C ABI: a job created with vouch_request is sent by
 * vouch_jobs_pump (and by its halves, vouch_jobs_deliver and vouch_avf_run) through a transport
 * callback that speaks HTTP/1.1 over a real socket to a receiver this test runs on 127.0.0.1 (a
 * thread). Checks the attempt headers and body the receiver
 * got, the job's status afterwards, a transport that reports no answer, and NULL arguments.
 *
 * Run by scripts/c-tests (static library, and under ASan/UBSan).
 */
#define _POSIX_C_SOURCE 200809L

#include <arpa/inet.h>
#include <netinet/in.h>
#include <pthread.h>
#include <stdint.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include "vouch.h"
#include "check.h"

/* ---- the receiver: one thread, one connection at a time, answers 200 ---------------------------- */

static int listener = -1;
static unsigned short port;
static char last_request[8192];
static int requests_seen;
static pthread_mutex_t seen_lock = PTHREAD_MUTEX_INITIALIZER;

static void *receiver_main(void *unused) {
    (void)unused;
    for (;;) {
        int client = accept(listener, NULL, NULL);
        if (client < 0) {
            return NULL;
        }
        char buffer[8192];
        size_t used = 0;
        /* Read the head, then Content-Length bytes of body. */
        for (;;) {
            ssize_t got = read(client, buffer + used, sizeof buffer - 1 - used);
            if (got <= 0) {
                break;
            }
            used += (size_t)got;
            buffer[used] = '\0';
            char *end = strstr(buffer, "\r\n\r\n");
            if (end != NULL) {
                const char *length = strstr(buffer, "Content-Length: ");
                size_t want = length ? (size_t)strtoul(length + 16, NULL, 10) : 0;
                if (used >= (size_t)(end + 4 - buffer) + want) {
                    break;
                }
            }
        }
        buffer[used] = '\0';
        pthread_mutex_lock(&seen_lock);
        memcpy(last_request, buffer, used + 1);
        requests_seen++;
        pthread_mutex_unlock(&seen_lock);
        /* Every answer carries a CAMARA SIM-swap verdict; job targets ignore it. */
        const char answer[] =
            "HTTP/1.1 200 OK\r\nContent-Length: 17\r\nConnection: close\r\n\r\n{\"swapped\":false}";
        ssize_t sent = write(client, answer, sizeof answer - 1);
        (void)sent;
        close(client);
    }
}

static bool start_receiver(pthread_t *thread) {
    listener = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    socklen_t size = sizeof address;
    if (listener < 0 || bind(listener, (struct sockaddr *)&address, sizeof address) != 0 ||
        listen(listener, 8) != 0 || getsockname(listener, (struct sockaddr *)&address, &size) != 0) {
        return false;
    }
    port = ntohs(address.sin_port);
    return pthread_create(thread, NULL, receiver_main, NULL) == 0;
}

/* ---- the host's transport: HTTP/1.1 over a socket to 127.0.0.1 ----------------------------------- */

static int transport_calls;

static int32_t socket_transport(void *user_data, const vouch_http_request *request,
                                vouch_http_response *response) {
    (void)user_data;
    transport_calls++;
    unsigned target_port = 0;
    char path[512] = "/";
    if (sscanf(request->url, "http://127.0.0.1:%u%511s", &target_port, path) < 1) {
        return 1;
    }
    int connection = socket(AF_INET, SOCK_STREAM, 0);
    struct sockaddr_in address;
    memset(&address, 0, sizeof address);
    address.sin_family = AF_INET;
    address.sin_port = htons((unsigned short)target_port);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    if (connection < 0 || connect(connection, (struct sockaddr *)&address, sizeof address) != 0) {
        if (connection >= 0) {
            close(connection);
        }
        return 2;
    }
    char head[4096];
    int length = snprintf(head, sizeof head, "%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Length: %zu\r\n",
                          request->method, path, request->body_len);
    for (size_t i = 0; i < request->header_count && length < (int)sizeof head; i++) {
        length += snprintf(head + length, sizeof head - (size_t)length, "%s: %s\r\n",
                           request->headers[i].name, request->headers[i].value);
    }
    length += snprintf(head + length, sizeof head - (size_t)length, "\r\n");
    bool written = write(connection, head, (size_t)length) == length &&
                   (request->body_len == 0 ||
                    write(connection, request->body, request->body_len) == (ssize_t)request->body_len);
    char answer[512] = {0};
    ssize_t got = written ? read(connection, answer, sizeof answer - 1) : -1;
    close(connection);
    unsigned status = 0;
    if (got <= 0 || sscanf(answer, "HTTP/1.1 %u", &status) != 1) {
        return 3;
    }
    response->status = (uint16_t)status;
    const char *body = strstr(answer, "\r\n\r\n");
    if (body != NULL &&
        vouch_http_response_set_body(response, (const uint8_t *)body + 4, strlen(body + 4)) != VOUCH_STATUS_OK) {
        return 4;
    }
    return 0;
}

static int32_t unreachable_transport(void *user_data, const vouch_http_request *request,
                                     vouch_http_response *response) {
    (void)request;
    (void)response;
    (*(int *)user_data)++;
    return 7;
}

/* ---- helpers ------------------------------------------------------------------------------------ */

static bool json_string(const char *json, const char *key, char *out, size_t size) {
    char pattern[64];
    snprintf(pattern, sizeof pattern, "\"%s\":\"", key);
    const char *start = json ? strstr(json, pattern) : NULL;
    if (start == NULL) {
        return false;
    }
    start += strlen(pattern);
    const char *end = strchr(start, '"');
    if (end == NULL || (size_t)(end - start) >= size) {
        return false;
    }
    memcpy(out, start, (size_t)(end - start));
    out[end - start] = '\0';
    return true;
}

/* Sends a request; returns the body JSON (copied into out) and the HTTP status. */
static unsigned send_request(const vouch_engine *engine, const char *method, const char *path,
                             const char *headers, const char *body, char *out, size_t size) {
    vouch_response *response = NULL;
    vouch_status status = vouch_request(engine, method, path, headers, NULL, 0, (const uint8_t *)body,
                                        body ? strlen(body) : 0, &response);
    if (status != VOUCH_STATUS_OK || response == NULL) {
        out[0] = '\0';
        return 0;
    }
    snprintf(out, size, "%s", vouch_response_body_json(response));
    unsigned code = vouch_response_status(response);
    vouch_response_free(response);
    return code;
}

/* Creates a job for `url`, due one second from now; writes its id. */
static bool create_job(const vouch_engine *engine, const char *headers, const char *url, char *id,
                       size_t id_size) {
    time_t due = time(NULL) + 1;
    struct tm utc;
    gmtime_r(&due, &utc);
    char when[32];
    strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%SZ", &utc);
    char body[512];
    snprintf(body, sizeof body,
             "{\"url\":\"%s\",\"scheduled_at\":\"%s\",\"body\":\"ping\",\"headers\":{\"X-From\":\"c\"}}",
             url, when);
    char json[4096];
    unsigned code = send_request(engine, "POST", "/jobs", headers, body, json, sizeof json);
    return check(code == 201 && json_string(json, "id", id, id_size), "POST /jobs -> 201 (%u %s)", code,
                 json);
}

static void wait_until_due(void) {
    struct timespec pause = {2, 100000000};
    nanosleep(&pause, NULL);
}

int main(void) {
    pthread_t receiver;
    if (!check(start_receiver(&receiver), "a receiver listens on 127.0.0.1")) {
        return 1;
    }
    vouch_engine *engine = NULL;
    char options[512];
    snprintf(options, sizeof options,
             "{\"database\":\":memory:\",\"template_key\":\"" KEY32 "\",\"api_keys\":{\"hs256_secret\":\"" KEY32
             "\"},\"allow_private\":[\"127.0.0.0/8\"],"
             "\"sim_swap\":{\"check_url\":\"http://127.0.0.1:%u/camara/check\"}}",
             (unsigned)port);
    vouch_status status = vouch_engine_new(options, &engine);
    check(status == VOUCH_STATUS_OK, "vouch_engine_new");
    char *key_json = NULL;
    status = vouch_api_key_create(engine, "{\"project_id\":\"p1\",\"selected_services\":[]}", &key_json);
    char token[1024];
    check(status == VOUCH_STATUS_OK && json_string(key_json, "token", token, sizeof token),
          "vouch_api_key_create");
    vouch_string_free(key_json);
    char headers[1200];
    snprintf(headers, sizeof headers, "{\"Authorization\":\"Bearer %s\"}", token);

    /* Delivered through the socket transport. */
    char url[128];
    snprintf(url, sizeof url, "http://127.0.0.1:%u/target", (unsigned)port);
    char id[64];
    create_job(engine, headers, url, id, sizeof id);
    int64_t next_due = 0;
    char *report = NULL;
    status = vouch_jobs_pump(engine, socket_transport, NULL, 10, &next_due, &report);
    check(status == VOUCH_STATUS_OK && strstr(report, "\"attempts\":0") != NULL && next_due > 0,
          "before it is due nothing is sent (%s, next due %lld)", report ? report : "(null)",
          (long long)next_due);
    vouch_string_free(report);
    wait_until_due();
    report = NULL;
    status = vouch_jobs_pump(engine, socket_transport, NULL, 10, &next_due, &report);
    check(status == VOUCH_STATUS_OK && report != NULL && strstr(report, "\"attempts\":1") != NULL &&
              strstr(report, "\"succeeded\":1") != NULL && next_due == -1,
          "vouch_jobs_pump sends the due job (%s, next due %lld)", report ? report : "(null)",
          (long long)next_due);
    vouch_string_free(report);
    pthread_mutex_lock(&seen_lock);
    char x_job[96];
    snprintf(x_job, sizeof x_job, "X-Job-Id: %s", id);
    check(requests_seen == 1 && strncmp(last_request, "POST /target HTTP/1.1", 21) == 0 &&
              strstr(last_request, x_job) != NULL && strstr(last_request, "X-Attempt: 1") != NULL &&
              strstr(last_request, "X-From: c") != NULL && strstr(last_request, "\r\n\r\nping") != NULL,
          "the receiver got the attempt with its headers and body");
    pthread_mutex_unlock(&seen_lock);
    char path[128];
    char json[4096];
    snprintf(path, sizeof path, "/jobs/%s", id);
    unsigned code = send_request(engine, "GET", path, headers, NULL, json, sizeof json);
    check(code == 200 && strstr(json, "\"status\":\"success\"") != NULL &&
              strstr(json, "\"execution_count\":1") != NULL,
          "the job succeeded (%s)", json);

    /* The two halves of a pump, for hosts that run them on different timers: deliveries only,
     * and the forgery analyses alone (none is waiting here). */
    create_job(engine, headers, url, id, sizeof id);
    wait_until_due();
    report = NULL;
    status = vouch_jobs_deliver(engine, socket_transport, NULL, 10, &next_due, &report);
    check(status == VOUCH_STATUS_OK && report != NULL && strstr(report, "\"attempts\":1") != NULL &&
              strstr(report, "\"succeeded\":1") != NULL && strstr(report, "\"analyses\":0") != NULL &&
              next_due == -1,
          "vouch_jobs_deliver sends the due job and runs no analysis (%s)", report ? report : "(null)");
    vouch_string_free(report);
    size_t analysed = 99;
    status = vouch_avf_run(engine, 5, &analysed);
    check(status == VOUCH_STATUS_OK && analysed == 0, "vouch_avf_run with nothing waiting ends none (%zu)",
          analysed);
    check(vouch_avf_run(engine, 5, NULL) == VOUCH_STATUS_OK, "vouch_avf_run takes a NULL out_done");

    /* A transport that reports no answer: the attempt fails without a status, the job fails. */
    create_job(engine, headers, "http://127.0.0.1:9/nothing", id, sizeof id);
    wait_until_due();
    int calls = 0;
    status = vouch_jobs_pump(engine, unreachable_transport, &calls, 10, NULL, NULL);
    check(status == VOUCH_STATUS_OK && calls == 1, "the failing transport was called once with user_data");
    snprintf(path, sizeof path, "/jobs/%s/executions", id);
    code = send_request(engine, "GET", path, headers, NULL, json, sizeof json);
    check(code == 200 && strstr(json, "\"status\":\"failed\"") != NULL &&
              strstr(json, "\"status_code\":null") != NULL &&
              strstr(json, "no answer (code 7)") != NULL,
          "the attempt is recorded as failed with the transport's code (%s)", json);

    /* A SIM-swap check: the session's end queues it, the pump sends it, and the verdict the
     * transport hands over with vouch_http_response_set_body becomes the stored result. */
    char session[96];
    code = send_request(engine, "POST", "/api-gateway/sessions/start", headers, NULL, json, sizeof json);
    check(code == 200 && json_string(json, "data", session, sizeof session), "session start (%s)", json);
    char gateway_headers[1300];
    snprintf(gateway_headers, sizeof gateway_headers,
             "{\"Authorization\":\"Bearer %s\",\"X-User-Fullname\":\"alice\"}", token);
    snprintf(path, sizeof path, "/api-gateway/sessions/end/%s", session);
    code = send_request(engine, "POST", path, gateway_headers, "{\"phone_number\":\"+4915112345678\"}",
                        json, sizeof json);
    check(code == 200 && strstr(json, "\"sim_swap_check\":\"pending\"") != NULL, "session end (%s)", json);
    status = vouch_jobs_pump(engine, socket_transport, NULL, 10, NULL, NULL);
    check(status == VOUCH_STATUS_OK, "the pump sends the check");
    snprintf(path, sizeof path, "/api-projects/sessions/%s/sim-swap", session);
    code = send_request(engine, "GET", path, headers, NULL, json, sizeof json);
    check(code == 200 && strstr(json, "\"status\":\"completed\"") != NULL &&
              strstr(json, "\"swapped\":false") != NULL,
          "the provider's verdict is the stored result (%s)", json);

    /* NULL arguments. */
    uint8_t byte = 1;
    check_failure(vouch_http_response_set_body(NULL, &byte, 1), VOUCH_STATUS_NULL_ARGUMENT, "response",
                  "vouch_http_response_set_body without a response");
    check_failure(vouch_jobs_pump(engine, NULL, NULL, 10, NULL, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "transport", "vouch_jobs_pump without a transport");
    check_failure(vouch_jobs_pump(NULL, socket_transport, NULL, 10, NULL, NULL),
                  VOUCH_STATUS_NULL_ARGUMENT, "engine", "vouch_jobs_pump without an engine");
    check_failure(vouch_jobs_deliver(engine, NULL, NULL, 10, NULL, NULL), VOUCH_STATUS_NULL_ARGUMENT,
                  "transport", "vouch_jobs_deliver without a transport");
    check_failure(vouch_avf_run(NULL, 1, NULL), VOUCH_STATUS_NULL_ARGUMENT, "engine",
                  "vouch_avf_run without an engine");

    vouch_engine_free(engine);
    shutdown(listener, SHUT_RDWR);
    close(listener);
    pthread_join(receiver, NULL);
    (void)read_file; /* check.h's file reader: not needed here */
    return summary();
}
