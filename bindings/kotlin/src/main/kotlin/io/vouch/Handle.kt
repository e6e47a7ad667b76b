// Ownership of a native pointer: many calls at once, one free, after the last call has returned,
// whether the app closes it or the garbage collector finds it unreachable.
package io.vouch

import java.lang.ref.PhantomReference
import java.lang.ref.ReferenceQueue
import java.util.Collections
import java.util.concurrent.ConcurrentHashMap
import java.util.concurrent.atomic.AtomicLong
import java.util.concurrent.locks.ReentrantReadWriteLock
import kotlin.concurrent.thread

/**
 * A pointer and its free function. Calls hold the read lock, so they run concurrently; [release]
 * takes the write lock, so it waits for running calls and frees exactly once. The owner object is
 * not referenced from here: the cleaner can hold this while the owner becomes unreachable.
 */
internal class NativeHandle(private var pointer: Long, private val free: (Long) -> Unit) {
    private val lock = ReentrantReadWriteLock()

    /** Runs [block] with the live pointer; throws IllegalStateException once released. */
    fun <T> use(block: (Long) -> T): T {
        val read = lock.readLock()
        read.lock()
        try {
            check(pointer != 0L) { "the engine is closed" }
            return block(pointer)
        } finally {
            read.unlock()
        }
    }

    val isReleased: Boolean
        get() {
            val read = lock.readLock()
            read.lock()
            try {
                return pointer == 0L
            } finally {
                read.unlock()
            }
        }

    /** Frees the pointer if nobody has yet; true when this call freed it. */
    fun release(): Boolean {
        val write = lock.writeLock()
        write.lock()
        try {
            if (pointer == 0L) return false
            val p = pointer
            pointer = 0L
            free(p)
            freed.incrementAndGet()
            return true
        } finally {
            write.unlock()
        }
    }

    companion object {
        /** Pointers freed by this process so far (for tests: each handle counts once). */
        val freed = AtomicLong()
    }
}

/**
 * Frees the handles of owners the app dropped without closing. A PhantomReference queue and one
 * daemon thread: java.lang.ref.Cleaner would do the same but needs Android API 33.
 */
internal object Cleaner {
    private val queue = ReferenceQueue<Any>()
    private val live: MutableSet<Watch> = Collections.newSetFromMap(ConcurrentHashMap<Watch, Boolean>())

    /** Handles the cleaner (not close()) freed, for tests. */
    val collected = AtomicLong()

    internal class Watch(owner: Any, val handle: NativeHandle, queue: ReferenceQueue<Any>) :
        PhantomReference<Any>(owner, queue)

    init {
        thread(isDaemon = true, name = "vouch-cleaner") {
            while (true) {
                val watch = queue.remove() as Watch
                live.remove(watch)
                if (watch.handle.release()) collected.incrementAndGet()
            }
        }
    }

    /** Watches [owner]; when it becomes unreachable, [handle] is released. */
    fun register(owner: Any, handle: NativeHandle): Watch {
        val watch = Watch(owner, handle, queue)
        live.add(watch)
        return watch
    }

    /** Stops watching after an explicit close. */
    fun forget(watch: Watch) {
        live.remove(watch)
        watch.clear()
    }
}
