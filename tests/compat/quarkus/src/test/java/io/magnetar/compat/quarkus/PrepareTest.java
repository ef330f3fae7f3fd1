package io.magnetar.compat.quarkus;

import org.junit.jupiter.api.Test;

/** Needs no server (and no Quarkus application): run alone by the runner while the
 *  registries are reachable, so Maven has resolved what a test run needs. */
class PrepareTest {
    @Test
    void resolves() {}
}
