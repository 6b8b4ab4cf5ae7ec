package dev.outbox.testkit.sim;

import org.junit.jupiter.api.Test;

class SimulationSmokeTest {
    @Test
    void oneRun() {
        Simulation sim = new Simulation(Simulation.builder().sendFailures(1).leaderChanges(1).storeErrors(1).rollbacks(1).poison(true).build());
        long t0 = System.nanoTime();
        Simulation.Outcome o = sim.run(Chooser.random(Long.getLong("seed", 1)));
        System.out.println(o.report());
        System.out.println("choices " + o.choiceCount() + " in " + (System.nanoTime() - t0) / 1_000_000 + " ms");
        long t1 = System.nanoTime();
        int failed = 0;
        for (int i = 0; i < 200; i++) {
            Simulation.Outcome x = sim.run(Chooser.random(i));
            if (x.failed()) { failed++; if (failed < 3) System.out.println("seed " + i + ":\n" + x.report()); }
        }
        System.out.println("200 runs, " + failed + " failed, " + (System.nanoTime() - t1) / 1_000_000 + " ms");
    }
}
