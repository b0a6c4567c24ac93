// Moments at which a test can make a rank die or wait, to reproduce a race
// that timing alone would hit only by chance, or count that a path ran. Null
// (nothing happens) outside the tests that set them, in their own processes.
#pragma once

namespace coll::test_hooks {

extern void (*shrink_decided)();          // a shrink's host, after publishing the members
extern void (*shrink_reading_members)();  // a shrink's guest, before reading them
extern void (*shrink_joined)();           // a shrink's member, its new communicator made, before the check all did
extern void (*agree_decided)();           // an agreement's host, after publishing its decision, before the commit
extern void (*agree_committed)();         // an agreement's host, after the commit
extern void (*agree_reading_commit)();    // an agreement's guest, before reading the commit
extern void (*grow_broadcasting)();       // a member of a growth, before rank 0's id goes out
extern void (*grow_joining)();            // a member of a growth, once it has the id, before joining
extern void (*staged_through_slots)();    // an operation compiled to run chunk by chunk through the staging slots
extern void (*ran_unstaged)(const char* call);  // a call outside a group that did not stage ("allreduce", "barrier")

}  // namespace coll::test_hooks
