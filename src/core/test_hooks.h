// Moments at which a test can make a rank die or wait, to reproduce a race
// that timing alone would hit only by chance. Null (nothing happens)
// outside the tests that set them, in their own processes.
#pragma once

namespace coll::test_hooks {

extern void (*shrink_decided)();          // a shrink's host, after publishing the members
extern void (*shrink_reading_members)();  // a shrink's guest, before reading them

}  // namespace coll::test_hooks
