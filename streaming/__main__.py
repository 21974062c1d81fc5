from streaming.run import main

raise SystemExit(main())
