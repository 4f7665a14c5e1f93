// Clang thread-safety annotations (https://clang.llvm.org/docs/ThreadSafetyAnalysis.html):
// what lock guards which member, which functions need a lock held or must not hold it. With
// clang and -Wthread-safety (scripts/thread-safety-check.sh) the compiler checks them; with
// any other compiler every macro expands to nothing. They change no code generated.
//
// libstdc++'s std::mutex carries no annotations, so a member can only be GUARDED_BY a
// util::Mutex (util/mutex.h). Conventions in weft:
//   - a member written or read under a lock is WEFT_GUARDED_BY(that lock); a pointer whose
//     pointee is, WEFT_PT_GUARDED_BY;
//   - a function named *_locked is WEFT_REQUIRES(the lock its callers hold);
//   - a public function that takes a lock itself is WEFT_EXCLUDES(it) where a caller could
//     plausibly hold it already (self-deadlock);
//   - WEFT_NO_THREAD_SAFETY_ANALYSIS only on the smallest function whose protocol the
//     analysis cannot follow (a try-lock result carried in a variable, a lock taken through
//     a reference it cannot name), with a comment saying why.
#pragma once

#if defined(__clang__) && defined(__has_attribute)
#if __has_attribute(capability)
#define WEFT_THREAD_ANNOTATION_(x) __attribute__((x))
#endif
#endif
#ifndef WEFT_THREAD_ANNOTATION_
#define WEFT_THREAD_ANNOTATION_(x)  // not clang: no analysis, no attributes
#endif

// On a class: its objects are locks ("mutex" names the kind in the analysis' messages).
#define WEFT_CAPABILITY(x) WEFT_THREAD_ANNOTATION_(capability(x))
// On a class: an RAII object that holds a lock for its lifetime (util::MutexLock).
#define WEFT_SCOPED_CAPABILITY WEFT_THREAD_ANNOTATION_(scoped_lockable)

// On a member: read and written only with the lock held.
#define WEFT_GUARDED_BY(x) WEFT_THREAD_ANNOTATION_(guarded_by(x))
// On a pointer member: the pointee is read and written only with the lock held.
#define WEFT_PT_GUARDED_BY(x) WEFT_THREAD_ANNOTATION_(pt_guarded_by(x))

// On a lock member: the order locks are taken in (deadlock avoidance). Checked only with
// -Wthread-safety-beta; written for the reader.
#define WEFT_ACQUIRED_BEFORE(...) WEFT_THREAD_ANNOTATION_(acquired_before(__VA_ARGS__))
#define WEFT_ACQUIRED_AFTER(...) WEFT_THREAD_ANNOTATION_(acquired_after(__VA_ARGS__))

// On a function: the caller holds the lock(s) (exclusively / at least shared).
#define WEFT_REQUIRES(...) WEFT_THREAD_ANNOTATION_(requires_capability(__VA_ARGS__))
#define WEFT_REQUIRES_SHARED(...) WEFT_THREAD_ANNOTATION_(requires_shared_capability(__VA_ARGS__))
// On a function: takes the lock(s) and returns holding them / releases held ones.
#define WEFT_ACQUIRE(...) WEFT_THREAD_ANNOTATION_(acquire_capability(__VA_ARGS__))
#define WEFT_RELEASE(...) WEFT_THREAD_ANNOTATION_(release_capability(__VA_ARGS__))
// On a function: takes the lock(s) when it returns the given value.
#define WEFT_TRY_ACQUIRE(...) WEFT_THREAD_ANNOTATION_(try_acquire_capability(__VA_ARGS__))
// On a function: the caller must not hold the lock(s) (the function takes them).
#define WEFT_EXCLUDES(...) WEFT_THREAD_ANNOTATION_(locks_excluded(__VA_ARGS__))
// On a function: tells the analysis the lock is held from here on (a check that cannot fail).
#define WEFT_ASSERT_CAPABILITY(x) WEFT_THREAD_ANNOTATION_(assert_capability(x))
// On a function: returns a reference to the given lock (an accessor).
#define WEFT_RETURN_CAPABILITY(x) WEFT_THREAD_ANNOTATION_(lock_returned(x))

// On a function: not analysed. Only with a comment saying why.
#define WEFT_NO_THREAD_SAFETY_ANALYSIS WEFT_THREAD_ANNOTATION_(no_thread_safety_analysis)
